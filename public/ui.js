// llm-gateway console: the few live parts. No framework; every fragment comes rendered (and
// escaped) from the server, so this file never builds markup from data.
'use strict';

/** The page's CSRF token, for fetches that change something. */
function csrfToken() {
  const meta = document.querySelector('meta[name="csrf-token"]');
  return meta ? meta.getAttribute('content') : '';
}
window.gwCsrf = csrfToken;

// Copy buttons: <button data-copy="#selector">
document.addEventListener('click', (event) => {
  const button = event.target.closest('[data-copy]');
  if (!button) return;
  const source = document.querySelector(button.getAttribute('data-copy'));
  if (!source) return;
  const text = 'value' in source ? source.value : source.textContent;
  navigator.clipboard?.writeText(text).then(() => { button.textContent = 'Copied'; }, () => { source.select?.(); });
});

// Confirm dangerous actions: <form data-confirm="Remove x?">
document.addEventListener('submit', (event) => {
  const form = event.target.closest('form[data-confirm]');
  if (form && !window.confirm(form.getAttribute('data-confirm'))) event.preventDefault();
});

// Live parts: <div data-live="/ui/events"> with children <div data-part="name">. A part is
// replaced only when its markup changed (a swap drops what the browser holds: focus, a
// selection); when the keyboard focus was inside it, it goes back to the element with the same
// id (or link target) in the new markup.
const scratch = document.createElement('template');

function focusKey(el) {
  if (el.id) return `#${CSS.escape(el.id)}`;
  const href = el.getAttribute('href');
  return href ? `[href="${CSS.escape(href)}"]` : undefined;
}

function swapPart(target, html) {
  scratch.innerHTML = html; // parsed like the part's own markup, so the two serialise alike
  if (scratch.innerHTML === target.innerHTML) return;
  const active = document.activeElement;
  const key = active && active !== target && target.contains(active) ? focusKey(active) : undefined;
  target.innerHTML = html;
  const again = key && target.querySelector(key);
  if (again) again.focus({ preventScroll: true });
}

for (const root of document.querySelectorAll('[data-live]')) {
  const source = new EventSource(root.getAttribute('data-live'));
  source.addEventListener('part', (event) => {
    const { name, html } = JSON.parse(event.data);
    const target = root.querySelector(`[data-part="${CSS.escape(name)}"]`);
    if (target) swapPart(target, html);
  });
  // the session ended (logout, key rotated, role taken away): no reconnecting; the reload shows the login
  source.addEventListener('session-ended', () => { source.close(); window.location.reload(); });
  window.addEventListener('pagehide', () => source.close());
}

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

// Live parts: <div data-live="/ui/events"> with children <div data-part="name">
for (const root of document.querySelectorAll('[data-live]')) {
  const source = new EventSource(root.getAttribute('data-live'));
  source.addEventListener('part', (event) => {
    const { name, html } = JSON.parse(event.data);
    const target = root.querySelector(`[data-part="${CSS.escape(name)}"]`);
    if (target) target.innerHTML = html;
  });
  window.addEventListener('pagehide', () => source.close());
}

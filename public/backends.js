// The backends tab: the form shows only the options of the chosen type (the others are hidden
// and switched off, so they are not posted), and "Test connection" posts the form in the
// background and shows the server-rendered result. Without this file every option is shown
// and the test button posts the form to the same route, which answers with the whole page.
'use strict';

// a refused form: bring the summary of its problems into view and focus
document.querySelector('[data-focus]')?.focus();

for (const form of document.querySelectorAll('[data-backend-form]')) setUpForm(form);

function setUpForm(form) {
  const select = form.querySelector('[data-type-select]');
  if (select) {
    const apply = () => showType(form, select.value);
    select.addEventListener('change', apply);
    apply();
  }
  const button = form.querySelector('[data-test-button]');
  const result = document.querySelector('[data-test-result]');
  if (button && result) {
    button.addEventListener('click', (event) => {
      event.preventDefault();
      void testConnection(form, button, result);
    });
  }
}

/** Hides (and disables) every part of the form the backend type does not read. */
function showType(form, type) {
  for (const part of form.querySelectorAll('[data-types]')) {
    const on = part.getAttribute('data-types').split(' ').includes(type);
    part.hidden = !on;
    if (part.tagName === 'FIELDSET') part.disabled = !on;
    else for (const input of part.querySelectorAll('input, select, textarea')) input.disabled = !on;
  }
}

async function testConnection(form, button, result) {
  const label = button.textContent;
  button.disabled = true;
  button.textContent = 'Testing…';
  result.setAttribute('aria-busy', 'true');
  try {
    const res = await fetch('/ui/backends/test?part=1', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-csrf-token': window.gwCsrf(), accept: 'text/html' },
      body: new URLSearchParams(new FormData(form)),
      credentials: 'same-origin',
    });
    if (res.ok) {
      result.innerHTML = await res.text(); // rendered and escaped by the server
    } else {
      say(result, res.status === 403 ? 'The test was refused: this page has expired. Reload it and try again.' : `The test could not run (HTTP ${res.status}).`);
    }
  } catch {
    say(result, 'The gateway did not answer: is it still running?');
  } finally {
    result.removeAttribute('aria-busy');
    button.disabled = false;
    button.textContent = label;
  }
}

function say(target, text) {
  const p = document.createElement('p');
  p.className = 'bk-test-error';
  p.textContent = text;
  target.replaceChildren(p);
}

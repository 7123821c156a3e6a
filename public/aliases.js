// The aliases tab: the filter narrows the tables as you type (without script, the same form
// filters on the server with ?q=); the editor shows the panel of the chosen routing mode, feeds
// each row's model picker from the chosen backend's models, and adds / removes backend rows by
// cloning the server-rendered row. Values are set as properties and attributes, never markup.
'use strict';

// a refused form: bring the summary of its problems into view; "add a backend" without script: its new row
document.querySelector('[data-focus]')?.focus();
const focusField = document.querySelector('[data-focus-field]')?.getAttribute('data-focus-field');
if (focusField) document.getElementById(focusField)?.focus();

const filter = document.querySelector('[data-alias-filter]');
if (filter) setUpFilter(filter);
const form = document.querySelector('form.al-form');
if (form) setUpEditor(form);

function setUpFilter(box) {
  const input = box.querySelector('input[type="search"]');
  const count = box.querySelector('[data-filter-count]');
  const rows = [...document.querySelectorAll('[data-filter-table] tbody tr[data-search]')];
  const total = rows.length;
  const apply = () => {
    const needle = input.value.trim().toLowerCase();
    let shown = 0;
    for (const row of rows) {
      const hit = !needle || row.getAttribute('data-search').includes(needle);
      row.hidden = !hit;
      if (hit) shown++;
    }
    for (const section of document.querySelectorAll('section')) {
      const empty = section.querySelector('[data-filter-empty]');
      if (!empty) continue;
      empty.hidden = [...section.querySelectorAll('tbody tr[data-search]')].some((r) => !r.hidden);
    }
    if (count) count.textContent = needle ? `Showing ${shown} of ${total}.` : `${total} aliases and patterns; type to narrow them down.`;
    const url = new URL(window.location.href);
    if (needle) url.searchParams.set('q', input.value.trim());
    else url.searchParams.delete('q');
    url.searchParams.delete('saved');
    url.searchParams.delete('name');
    window.history.replaceState(null, '', url);
  };
  input.addEventListener('input', apply);
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && input.value) { input.value = ''; apply(); }
  });
}

function setUpEditor(editor) {
  const panels = [...editor.querySelectorAll('[data-panel]')];
  const modes = [...editor.querySelectorAll('input[data-mode]')];
  const showMode = () => {
    const mode = modes.find((m) => m.checked)?.value ?? 'map';
    for (const panel of panels) panel.hidden = panel.getAttribute('data-panel') !== mode;
  };
  for (const m of modes) m.addEventListener('change', showMode);
  showMode();

  const rows = editor.querySelector('[data-rows]');
  if (!rows) return;
  const pickList = (row) => {
    const select = row.querySelector('select[data-backend]');
    const list = select.selectedOptions[0]?.getAttribute('data-list') || 'dl-models';
    row.querySelector('input[data-model]').setAttribute('list', list);
  };
  const number = () => {
    [...rows.querySelectorAll('[data-row]')].forEach((row, i) => {
      for (const [selector, part] of [['select[data-backend]', 'backend'], ['input[data-model]', 'model']]) {
        const field = row.querySelector(selector);
        const id = `map-${i}-${part}`;
        field.id = id;
        field.closest('.field').querySelector('label').htmlFor = id;
      }
      row.querySelector('[data-remove-row]').setAttribute('aria-label', `Remove backend row ${i + 1}`);
    });
  };
  rows.addEventListener('change', (event) => {
    const row = event.target.closest('[data-row]');
    if (row && event.target.matches('select[data-backend]')) pickList(row);
  });
  rows.addEventListener('click', (event) => {
    const button = event.target.closest('[data-remove-row]');
    if (!button) return;
    const row = button.closest('[data-row]');
    const all = rows.querySelectorAll('[data-row]');
    if (all.length === 1) {
      row.querySelector('select[data-backend]').value = '';
      row.querySelector('input[data-model]').value = '';
      pickList(row);
      row.querySelector('select[data-backend]').focus();
      return;
    }
    const next = row.nextElementSibling ?? row.previousElementSibling;
    row.remove();
    number();
    next?.querySelector('select[data-backend]')?.focus();
  });
  for (const button of rows.querySelectorAll('[data-remove-row]')) button.hidden = false;

  editor.querySelector('[data-add-row]')?.addEventListener('click', (event) => {
    event.preventDefault();
    const last = rows.querySelector('[data-row]:last-child');
    const row = last.cloneNode(true);
    for (const error of row.querySelectorAll('.error')) error.remove();
    for (const field of row.querySelectorAll('.field')) field.classList.remove('invalid');
    for (const input of row.querySelectorAll('select, input')) {
      input.removeAttribute('aria-invalid');
      input.removeAttribute('aria-describedby');
      input.value = '';
    }
    // a backend "not in the fleet" of the cloned row is not offered again
    for (const option of row.querySelectorAll('option[data-unknown]')) option.remove();
    rows.append(row);
    number();
    pickList(row);
    row.querySelector('select[data-backend]').focus();
  });
}

// The users tab: the allow-list picker as removable chips with type-ahead. Without this file
// the same form works with checkboxes, a multi-select and a text box. Chips are clones of the
// server-rendered <template>; values are set as text and attributes, never as markup.
'use strict';

for (const picker of document.querySelectorAll('[data-allow-picker]')) setUpPicker(picker);

// a refused form: bring the summary of its problems into view and focus
document.querySelector('[data-focus]')?.focus();

function setUpPicker(picker) {
  const chips = picker.querySelector('[data-chips]');
  const empty = picker.querySelector('[data-chips-empty]');
  const template = picker.querySelector('template[data-chip-template]');
  const input = picker.querySelector('#allow-add');
  const announce = picker.querySelector('[data-announce]');
  const choices = new Map([...picker.querySelectorAll('datalist option')].map((o) => [o.value, o.label]));
  if (!chips || !template || !input) return;

  // script on: chips get a × button, the no-script inputs are switched off (not posted)
  picker.classList.add('js');
  picker.querySelector('[data-js-only]').hidden = false;
  const noJs = picker.querySelector('[data-nojs]');
  noJs.hidden = true;
  for (const field of noJs.querySelectorAll('select, textarea')) field.disabled = true;
  for (const button of chips.querySelectorAll('[data-remove]')) button.hidden = false;
  // the (hidden) checkboxes still carry the values; the × buttons are what the keyboard reaches
  for (const box of chips.querySelectorAll('input[type="checkbox"]')) box.tabIndex = -1;

  const values = () => [...chips.querySelectorAll('input[name="allow"]')].map((i) => i.value);
  const say = (text) => { if (announce) announce.textContent = text; };
  const refresh = () => { if (empty) empty.hidden = chips.children.length > 0; };

  function add(raw) {
    const value = raw.trim();
    if (!value) return false;
    const existing = values().indexOf(value);
    if (existing >= 0) {
      say(`${value} is already on the list`);
      chips.children[existing].querySelector('[data-remove]')?.focus();
      return false;
    }
    const li = template.content.firstElementChild.cloneNode(true);
    const kind = choices.get(value) || (value.includes('/') ? 'backend/model' : 'not known now');
    li.classList.add(`kind-${kind === 'not known now' ? 'unknown' : kind.replace(/[^a-z]+/g, '-')}`);
    li.querySelector('input').value = value;
    li.querySelector('input').tabIndex = -1;
    li.querySelector('.chip-text').textContent = value;
    li.querySelector('.chip-kind').textContent = kind;
    li.querySelector('[data-remove]').setAttribute('aria-label', `Remove ${value}`);
    chips.append(li);
    refresh();
    say(`Added ${value}`);
    return true;
  }

  chips.addEventListener('click', (event) => {
    const button = event.target.closest('[data-remove]');
    if (!button) return;
    const li = button.closest('li');
    const value = li.querySelector('input').value;
    const next = li.nextElementSibling ?? li.previousElementSibling;
    li.remove();
    refresh();
    say(`Removed ${value}`);
    (next?.querySelector('[data-remove]') ?? input).focus();
  });

  const addTyped = () => { if (add(input.value)) input.value = ''; };
  picker.querySelector('[data-add]').addEventListener('click', () => { addTyped(); input.focus(); });
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter') {
      event.preventDefault(); // Enter adds the entry, it does not submit the form
      addTyped();
    }
  });
  // picking a suggestion from the list adds it at once
  input.addEventListener('input', (event) => {
    if (event.inputType === 'insertReplacementText' || (event.inputType === undefined && choices.has(input.value))) addTyped();
  });
  // what is typed but not added yet still counts when the form is saved
  picker.closest('form')?.addEventListener('submit', () => { if (input.value.trim()) addTyped(); });
  refresh();
}

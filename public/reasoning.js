// The reasoning tab: the resolver's model box suggests the chosen backend's models (and takes
// its first one when the typed id is not among them); the rule editor shows the params help of
// the chosen mechanism only. Without this file every help block shows and any id may be typed.
'use strict';

document.querySelector('[data-focus]')?.focus();

const resolver = document.querySelector('[data-resolver]');
if (resolver) {
  const backend = resolver.querySelector('select[data-backend]');
  const model = resolver.querySelector('input[data-model]');
  backend.addEventListener('change', () => {
    const id = backend.selectedOptions[0]?.getAttribute('data-list') || 'rs-dl-all';
    model.setAttribute('list', id);
    const options = [...(document.getElementById(id)?.options ?? [])].map((o) => o.value);
    if (options.length && !options.includes(model.value)) model.value = options[0];
  });
}

const mechanisms = [...document.querySelectorAll('input[data-mechanism]')];
if (mechanisms.length) {
  const show = () => {
    const chosen = mechanisms.find((m) => m.checked)?.value;
    for (const help of document.querySelectorAll('[data-params-for]')) help.hidden = help.getAttribute('data-params-for') !== chosen;
  };
  for (const m of mechanisms) m.addEventListener('change', show);
  show();
}

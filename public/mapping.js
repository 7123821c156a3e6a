// The mapping tab: reads a chosen .json file into the workflow box, keeps field lists in step
// with the chosen node, swaps a pin's value box for the backend's choices, and shows one
// backend section at a time. Every option list comes rendered from the server in <template>s;
// this file only clones them (it never builds markup from data).
'use strict';

(() => {
  // a .json file → the text box (the console has no multipart: the file never leaves as a file)
  for (const input of document.querySelectorAll('input[type="file"][data-into]')) {
    input.addEventListener('change', () => {
      const file = input.files && input.files[0];
      const target = document.querySelector(input.getAttribute('data-into'));
      const status = document.getElementById(input.getAttribute('aria-describedby'));
      if (!file || !target) return;
      const reader = new FileReader();
      reader.onload = () => {
        target.value = String(reader.result);
        if (status) status.textContent = `Read ${file.name} (${Math.round(file.size / 1024)} KiB).`;
        target.closest('details')?.setAttribute('open', '');
      };
      reader.onerror = () => { if (status) status.textContent = `Could not read ${file.name}.`; };
      reader.readAsText(file);
    });
  }

  const templates = document.querySelector('.mapping-templates');
  const findTemplate = (attr, scope, node, field) => {
    if (!templates) return null;
    for (const t of templates.querySelectorAll(`template[${attr}]`)) {
      if (t.getAttribute(attr) === scope && t.dataset.node === node && (field === undefined || t.dataset.field === field)) return t;
    }
    return null;
  };

  const showHint = (fieldSelect) => {
    const hint = document.querySelector(fieldSelect.getAttribute('data-hint-target') || '#none');
    const option = fieldSelect.selectedOptions[0];
    if (hint) hint.textContent = option ? option.getAttribute('data-hint') || '' : '';
  };

  // a pin's value: the backend's choices for a combo input, else a text box
  const swapValue = (fieldSelect) => {
    const old = document.querySelector(fieldSelect.getAttribute('data-value-control') || '#none');
    if (!old) return;
    const node = document.querySelector(`[data-field-select="#${CSS.escape(fieldSelect.id)}"]`)?.value ?? '';
    const combo = findTemplate('data-choices', fieldSelect.getAttribute('data-choices-scope'), node, fieldSelect.value);
    const source = combo || templates?.querySelector('template[data-value-input]');
    if (!source) return;
    const fresh = source.content.firstElementChild.cloneNode(true);
    for (const attr of ['id', 'name', 'aria-describedby', 'aria-invalid']) {
      if (old.hasAttribute(attr)) fresh.setAttribute(attr, old.getAttribute(attr));
    }
    const value = old.value;
    if (fresh.tagName === 'SELECT') {
      if ([...fresh.options].some((o) => o.value === value)) fresh.value = value;
    } else if (old.tagName !== 'SELECT') fresh.value = value;
    old.replaceWith(fresh);
  };

  document.addEventListener('change', (event) => {
    const el = event.target;
    if (!(el instanceof HTMLSelectElement)) return;
    if (el.hasAttribute('data-fields-scope')) {
      const fieldSelect = document.querySelector(el.getAttribute('data-field-select'));
      const t = findTemplate('data-fields', el.getAttribute('data-fields-scope'), el.value);
      if (!fieldSelect) return;
      const previous = fieldSelect.value;
      fieldSelect.replaceChildren(...(t ? [...t.content.cloneNode(true).childNodes] : []));
      if ([...fieldSelect.options].some((o) => o.value === previous)) fieldSelect.value = previous;
      showHint(fieldSelect);
      if (fieldSelect.hasAttribute('data-value-control')) swapValue(fieldSelect);
    } else if (el.hasAttribute('data-hint-target')) {
      showHint(el);
      if (el.hasAttribute('data-value-control')) swapValue(el);
    }
  });

  // one backend section at a time; a link to a field inside a hidden one opens it
  const nav = document.querySelector('[data-tabs]');
  const panels = nav ? [...document.querySelectorAll(`${nav.getAttribute('data-tabs')} [data-tab-panel]`)] : [];
  if (nav && panels.length > 1) {
    const links = [...nav.querySelectorAll('a[data-tab]')];
    nav.querySelector('ul')?.setAttribute('role', 'tablist');
    const show = (id, focus) => {
      for (const p of panels) p.hidden = p.id !== id;
      for (const a of links) {
        const on = a.getAttribute('data-tab') === id;
        a.setAttribute('role', 'tab');
        a.setAttribute('aria-selected', on ? 'true' : 'false');
        a.setAttribute('aria-controls', a.getAttribute('data-tab'));
        a.tabIndex = on ? 0 : -1;
        if (on && focus) a.focus();
      }
    };
    for (const p of panels) p.setAttribute('role', 'tabpanel');
    nav.addEventListener('click', (event) => {
      const a = event.target.closest('a[data-tab]');
      if (!a) return;
      event.preventDefault();
      show(a.getAttribute('data-tab'), true);
    });
    nav.addEventListener('keydown', (event) => {
      const at = links.indexOf(document.activeElement);
      if (at < 0 || (event.key !== 'ArrowRight' && event.key !== 'ArrowLeft')) return;
      const next = links[(at + (event.key === 'ArrowRight' ? 1 : links.length - 1)) % links.length];
      show(next.getAttribute('data-tab'), true);
      event.preventDefault();
    });
    const reveal = (target) => {
      const panel = target?.closest('[data-tab-panel]');
      if (panel) show(panel.id, false);
    };
    document.addEventListener('click', (event) => {
      const a = event.target.closest('a[href^="#"]');
      if (!a || a.hasAttribute('data-tab')) return;
      const target = document.getElementById(a.getAttribute('href').slice(1));
      reveal(target);
      target?.focus?.();
    });
    const firstBad = panels.find((p) => p.querySelector('[aria-invalid="true"]'));
    const firstUsed = panels.find((p) => !p.classList.contains('unused'));
    show((firstBad || firstUsed || panels[0]).id, false);
  }
})();

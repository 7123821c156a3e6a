// Playground: Chat, Media and Voice as real API clients of this gateway (fetch to /v1 with the
// key typed on the page). Text from the API is set with textContent only; the pieces of markup
// come from <template>s the server rendered. The key never goes to a /ui route.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const KEY_STORE = 'gw-playground-key';
  const keyInput = $('pg-key');
  const remember = $('pg-remember');
  if (!keyInput) return;

  // ---- the key: in memory, or in this tab's sessionStorage when asked ----
  try {
    const kept = sessionStorage.getItem(KEY_STORE);
    if (kept) { keyInput.value = kept; remember.checked = true; }
  } catch { /* storage blocked */ }
  const keepKey = () => {
    try {
      if (remember.checked && keyInput.value) sessionStorage.setItem(KEY_STORE, keyInput.value);
      else sessionStorage.removeItem(KEY_STORE);
    } catch { /* storage blocked */ }
  };
  keyInput.addEventListener('change', () => { keepKey(); loadModels(); });
  remember.addEventListener('change', keepKey);
  const auth = (extra = {}) => {
    const key = keyInput.value.trim();
    return key ? { ...extra, authorization: `Bearer ${key}` } : extra;
  };

  // ---- inline errors and readable API errors ----
  const fieldError = (inputId, message) => {
    const input = $(inputId);
    const out = $(`${inputId}-error`);
    if (!input || !out) return false;
    out.textContent = message || '';
    out.hidden = !message;
    input.closest('.field')?.classList.toggle('invalid', Boolean(message));
    if (message) input.setAttribute('aria-invalid', 'true'); else input.removeAttribute('aria-invalid');
    return true;
  };
  const clearErrors = (form) => {
    for (const el of form.querySelectorAll('[aria-invalid]')) fieldError(el.id, '');
  };
  const showBox = (box, message) => { box.textContent = message || ''; box.hidden = !message; };
  async function apiError(res) {
    let text = '';
    try { text = await res.text(); } catch { /* connection gone */ }
    let err;
    try { err = JSON.parse(text).error; } catch { /* not JSON */ }
    if (err && typeof err === 'object') {
      const code = err.code || err.type || 'error';
      const param = typeof err.param === 'string' ? err.param : null;
      return { param, message: `HTTP ${res.status} · ${code}: ${err.message || 'no message'}${param ? ` (param: ${param})` : ''}` };
    }
    return { param: null, message: `HTTP ${res.status}${text ? `: ${text.slice(0, 300)}` : ''}` };
  }
  const failure = (err) => (err && err.name === 'AbortError' ? 'Stopped.' : `Could not reach the gateway: ${err && err.message ? err.message : err}`);

  // ---- model pickers from GET /v1/models ----
  const modelStatus = $('pg-models-status');
  async function listModels(type) {
    const res = await fetch(`/v1/models?type=${type}`, { headers: auth(), credentials: 'omit' });
    if (!res.ok) throw await apiError(res);
    const body = await res.json();
    return (body.data || []).map((m) => m.id).filter((id) => typeof id === 'string');
  }
  function fill(select, ids) {
    const before = select.value;
    select.replaceChildren(new Option(ids.length ? 'Choose a model' : 'No model available', ''));
    for (const id of ids) select.add(new Option(id, id));
    if (ids.includes(before)) select.value = before;
    else if (ids.length === 1) select.value = ids[0];
    select.dispatchEvent(new Event('change'));
  }
  async function loadModels() {
    modelStatus.textContent = 'Loading models…';
    fieldError('pg-key', '');
    try {
      const [chat, image] = await Promise.all([listModels('chat'), listModels('image')]);
      for (const s of document.querySelectorAll('select[data-models="chat"]')) fill(s, chat);
      for (const s of document.querySelectorAll('select[data-models="image"]')) fill(s, image);
      modelStatus.textContent = `${chat.length} chat model${chat.length === 1 ? '' : 's'}, ${image.length} generation model${image.length === 1 ? '' : 's'} for this key.`;
    } catch (err) {
      const message = err && err.message ? err.message : String(err);
      modelStatus.textContent = 'Models could not be loaded.';
      fieldError('pg-key', message);
    }
  }
  $('pg-load-models').addEventListener('click', loadModels);

  // ---- panels as tabs (arrow keys, Home/End; the hash picks one) ----
  const tabs = [...document.querySelectorAll('.pg-tabs [role="tab"]')];
  const select = (tab, focus) => {
    for (const t of tabs) {
      const on = t === tab;
      t.setAttribute('aria-selected', String(on));
      t.tabIndex = on ? 0 : -1;
      $(t.getAttribute('aria-controls')).hidden = !on;
    }
    if (focus) tab.focus();
    history.replaceState(null, '', `#${tab.id.replace('pg-tab-', '')}`);
  };
  for (const tab of tabs) {
    tab.addEventListener('click', () => select(tab, false));
    tab.addEventListener('keydown', (event) => {
      const i = tabs.indexOf(tab);
      const next = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 }[event.key];
      if (next === undefined) return;
      event.preventDefault();
      select(tabs[(next + tabs.length) % tabs.length], true);
    });
  }
  const fromHash = tabs.find((t) => t.id === `pg-tab-${location.hash.slice(1)}`);
  if (fromHash) select(fromHash, false);

  // ---- SSE over fetch (EventSource cannot send Authorization) ----
  async function* sseFrames(res) {
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, '\n');
      let at;
      while ((at = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        const frame = { event: 'message', data: '' };
        const data = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('event:')) frame.event = line.slice(6).trim();
          else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
        }
        if (data.length) { frame.data = data.join('\n'); yield frame; }
      }
    }
  }
  const ms = (n) => (n < 1000 ? `${Math.round(n)} ms` : `${(n / 1000).toFixed(2)} s`);
  const int = (n) => (typeof n === 'number' ? n.toLocaleString('en-US') : '–');

  window.gwPlayground = { $, auth, fieldError, clearErrors, showBox, apiError, failure, sseFrames, ms, int };
  if (document.querySelector('.pg-key').dataset.open === '1' || keyInput.value) loadModels();
})();

// Playground · Chat: streams through /v1/chat/completions (stream_options.include_usage), the
// answer shown as it arrives (textContent), the gateway's headers, tokens, timing and the cost
// read back from the call log once the call is logged.
'use strict';

(() => {
  const pg = window.gwPlayground;
  if (!pg) return;
  const { $ } = pg;
  const form = $('pg-chat-form');
  const transcript = $('pg-transcript');
  const empty = $('pg-transcript-empty');
  const errBox = $('pg-chat-error');
  const metaBox = $('pg-chat-meta');
  const input = $('pg-chat-input');
  const messages = [];
  let controller = null;

  const meta = (name, text) => { const el = metaBox.querySelector(`[data-meta="${name}"]`); if (el) el.textContent = text; return el; };
  const busy = (on) => {
    $('pg-chat-send').disabled = on;
    $('pg-chat-stop').disabled = !on;
    form.classList.toggle('busy', on);
  };
  function bubble(role, label) {
    const node = $('pg-msg-template').content.firstElementChild.cloneNode(true);
    node.classList.add(`pg-msg-${role}`);
    node.querySelector('.pg-msg-role').textContent = label;
    empty.hidden = true;
    transcript.append(node);
    transcript.scrollTop = transcript.scrollHeight;
    return node;
  }

  input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) { event.preventDefault(); form.requestSubmit(); }
  });
  $('pg-chat-stop').addEventListener('click', () => controller?.abort());
  $('pg-chat-clear').addEventListener('click', () => {
    controller?.abort();
    messages.length = 0;
    for (const el of transcript.querySelectorAll('.pg-msg')) el.remove();
    empty.hidden = false;
    metaBox.hidden = true;
    pg.showBox(errBox, '');
    input.focus();
  });

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (controller) return;
    pg.clearErrors(form);
    pg.showBox(errBox, '');
    const model = $('pg-chat-model').value;
    const text = input.value.trim();
    const max = $('pg-max-tokens').value.trim();
    let bad = false;
    if (!model) bad = pg.fieldError('pg-chat-model', 'Choose a model (load the models with your key first).');
    if (!text) bad = pg.fieldError('pg-chat-input', 'Write a message first.') || bad;
    if (max && !(/^\d{1,7}$/.test(max) && Number(max) >= 1)) bad = pg.fieldError('pg-max-tokens', 'A whole number of tokens, at least 1.') || bad;
    if (bad) { form.querySelector('[aria-invalid]')?.focus(); return; }

    const reasoning = form.querySelector('input[name="reasoning"]:checked')?.value || '';
    const system = $('pg-system').value.trim();
    messages.push({ role: 'user', content: text });
    bubble('user', 'You').querySelector('.pg-msg-text').textContent = text;
    input.value = '';
    const answer = bubble('assistant', model);
    const out = answer.querySelector('.pg-msg-text');
    answer.classList.add('streaming');
    const body = {
      model, stream: true, stream_options: { include_usage: true },
      messages: system ? [{ role: 'system', content: system }, ...messages] : [...messages],
    };
    if (reasoning) body.reasoning = reasoning;
    if (max) body.max_tokens = Number(max);

    controller = new AbortController();
    busy(true);
    const since = Date.now();
    const started = performance.now();
    let first = null;
    let usage = null;
    let content = '';
    let requestId = '';
    for (const name of ['backend', 'reasoning', 'tokens', 'timing', 'cost', 'request']) meta(name, '–');
    metaBox.hidden = false;
    try {
      const res = await fetch('/v1/chat/completions', {
        method: 'POST', body: JSON.stringify(body), signal: controller.signal, credentials: 'omit',
        headers: pg.auth({ 'content-type': 'application/json' }),
      });
      requestId = res.headers.get('x-request-id') || '';
      meta('backend', res.headers.get('x-gateway-backend') || '–');
      meta('reasoning', res.headers.get('x-reasoning-control') || 'none');
      meta('request', requestId || '–');
      if (!res.ok) {
        const err = await pg.apiError(res);
        pg.showBox(errBox, err.message);
        if (err.param === 'model') pg.fieldError('pg-chat-model', err.message);
        if (err.param === 'max_tokens') pg.fieldError('pg-max-tokens', err.message);
        answer.remove();
        messages.pop();
        input.value = text;
        return;
      }
      for await (const frame of pg.sseFrames(res)) {
        if (frame.data === '[DONE]') break;
        let chunk;
        try { chunk = JSON.parse(frame.data); } catch { continue; }
        if (chunk.error) { pg.showBox(errBox, `The stream broke off: ${chunk.error.message || JSON.stringify(chunk.error)}`); break; }
        if (chunk.usage) usage = chunk.usage;
        const delta = chunk.choices && chunk.choices[0] && chunk.choices[0].delta;
        if (!delta) continue;
        const think = typeof delta.reasoning_content === 'string' ? delta.reasoning_content : typeof delta.reasoning === 'string' ? delta.reasoning : '';
        if (think) {
          first ??= performance.now();
          const box = answer.querySelector('.pg-thinking');
          box.hidden = false;
          box.querySelector('.pg-thinking-text').append(think);
        }
        if (typeof delta.content === 'string' && delta.content) {
          first ??= performance.now();
          out.append(delta.content);
          content += delta.content;
          transcript.scrollTop = transcript.scrollHeight;
        }
      }
    } catch (err) {
      pg.showBox(errBox, pg.failure(err));
    } finally {
      answer.classList.remove('streaming');
      if (answer.isConnected) {
        if (content) messages.push({ role: 'assistant', content });
        else if (!out.textContent) out.textContent = '(no text)';
      }
      const total = performance.now() - started;
      meta('timing', `${first === null ? '–' : pg.ms(first - started)} · ${pg.ms(total)}`);
      if (usage) meta('tokens', tokens(usage.prompt_tokens, usage.completion_tokens, usage.prompt_tokens_details?.cached_tokens));
      controller = null;
      busy(false);
    }
    if (requestId) void lookupCost(requestId, since, usage === null);
  });

  function tokens(inTok, outTok, cached) {
    return `${pg.int(inTok)} / ${pg.int(outTok)}${cached ? ` (${pg.int(cached)} cached)` : ''}`;
  }

  async function lookupCost(requestId, since, fillTokens) {
    meta('cost', 'looking up…');
    for (let attempt = 1; attempt <= 6; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
      let row;
      try {
        const res = await fetch(`/ui/playground/call?request_id=${encodeURIComponent(requestId)}&since=${since}`, {
          headers: { accept: 'application/json' }, credentials: 'same-origin',
        });
        if (!res.ok) break;
        row = await res.json();
      } catch { break; }
      if (!row.found) continue;
      meta('cost', `${row.cost}${row.usage_estimated ? ' · tokens estimated' : ''}`);
      if (fillTokens) meta('tokens', tokens(row.prompt_tokens, row.completion_tokens, row.cached_tokens));
      const link = meta('request', requestId);
      if (link && typeof row.id === 'number') link.href = `/ui/calls/${row.id}`;
      return;
    }
    meta('cost', 'see the call log');
  }
})();

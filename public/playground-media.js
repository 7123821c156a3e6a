// Playground · Media: POST /v1/generations (async, reference files as data URIs), then the
// job's events over fetch (GET /v1/jobs/{id}/events with the key), a progress bar to 100 %,
// the live preview and the results, each fetched with the key as a blob.
'use strict';

(() => {
  const pg = window.gwPlayground;
  if (!pg) return;
  const { $ } = pg;
  const form = $('pg-media-form');
  const picker = $('pg-media-model');
  const paramsBox = $('pg-media-params');
  const errBox = $('pg-media-error');
  const jobBox = $('pg-media-job');
  const FILE_LIMIT = 64 * 1024 * 1024;
  const fieldsets = [...form.querySelectorAll('fieldset.pg-alias')];
  let current = null; // { id, controller }
  let objectUrls = [];

  const aliasBox = () => fieldsets.find((f) => f.dataset.alias === picker.value);
  picker.addEventListener('change', () => { for (const f of fieldsets) f.hidden = f.dataset.alias !== picker.value; });

  const parseParams = () => {
    const text = paramsBox.value.trim();
    if (!text) return {};
    let value;
    try { value = JSON.parse(text); } catch (err) { throw new Error(`Not valid JSON: ${err.message}`); }
    if (!value || typeof value !== 'object' || Array.isArray(value)) throw new Error('Parameters are a JSON object: {"name": value, …}.');
    return value;
  };
  // a parameter chip adds its name with the workflow's value
  form.addEventListener('click', (event) => {
    const chip = event.target.closest('button[data-param]');
    if (!chip) return;
    let params;
    try { params = parseParams(); } catch (err) { pg.fieldError('pg-media-params', err.message); return; }
    let value = '';
    try { if (chip.dataset.default) value = JSON.parse(chip.dataset.default); } catch { /* keep '' */ }
    params[chip.dataset.param] = value;
    paramsBox.value = JSON.stringify(params, null, 2);
    pg.fieldError('pg-media-params', '');
  });

  const readDataUri = (file) => new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
  const setStatus = (status, where) => {
    const el = $('pg-media-status');
    el.className = `status ${status}`;
    el.textContent = status;
    if (where !== undefined) $('pg-media-where').textContent = where;
  };
  const setProgress = (value) => {
    const pct = Math.max(0, Math.min(100, Math.round(Number(value) || 0)));
    $('pg-media-progress').value = pct;
    $('pg-media-progress').textContent = `${pct}%`;
    $('pg-media-pct').textContent = `${pct}%`;
  };
  const busy = (on) => { $('pg-media-run').disabled = on; $('pg-media-cancel').disabled = !on; };
  async function blobUrl(path, keep = true) {
    const res = await fetch(path, { headers: pg.auth(), credentials: 'omit' });
    if (!res.ok) throw await pg.apiError(res);
    const url = URL.createObjectURL(await res.blob());
    if (keep) objectUrls.push(url);
    return url;
  }
  // each preview replaces the last (its blob URL let go once the new one is shown)
  let previewSeq = 0;
  let previewUrl = null;
  async function previewOf(id) {
    const seq = ++previewSeq;
    let url;
    try { url = await blobUrl(`/v1/jobs/${encodeURIComponent(id)}/preview`, false); } catch { return; }
    if (seq !== previewSeq) return URL.revokeObjectURL(url); // a newer one is on its way
    if (previewUrl) URL.revokeObjectURL(previewUrl);
    previewUrl = url;
    $('pg-media-preview').src = url;
    $('pg-media-preview-box').hidden = false;
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (current) return;
    pg.clearErrors(form);
    pg.showBox(errBox, '');
    const model = picker.value;
    const prompt = $('pg-media-prompt').value.trim();
    let bad = false;
    let params = {};
    if (!model) bad = pg.fieldError('pg-media-model', 'Choose a generation model (load the models with your key first).');
    try { params = parseParams(); } catch (err) { bad = pg.fieldError('pg-media-params', err.message) || bad; }
    const images = {};
    const files = {};
    for (const input of aliasBox()?.querySelectorAll('input[type="file"]') ?? []) {
      const file = input.files && input.files[0];
      if (!file) continue;
      if (file.size > FILE_LIMIT) { bad = pg.fieldError(input.id, 'At most 64 MiB per file.') || bad; continue; }
      const uri = await readDataUri(file);
      if (input.dataset.kind === 'image' || input.dataset.kind === 'mask') images[input.dataset.slot] = uri;
      else files[input.dataset.slot] = uri;
    }
    if (!prompt && !Object.keys(params).length && !Object.keys(images).length && !Object.keys(files).length) {
      bad = pg.fieldError('pg-media-prompt', 'Write a prompt (or give parameters or a reference file).') || bad;
    }
    if (bad) { form.querySelector('[aria-invalid]')?.focus(); return; }

    const body = { model, mode: 'async', params };
    if (prompt) body.prompt = prompt;
    if (Object.keys(images).length) body.images = images;
    if (Object.keys(files).length) body.files = files;
    for (const url of objectUrls) URL.revokeObjectURL(url);
    objectUrls = [];
    $('pg-media-results').replaceChildren();
    $('pg-media-preview-box').hidden = true;
    setProgress(0);
    busy(true);
    current = { id: null, controller: new AbortController() };
    try {
      const res = await fetch('/v1/generations', {
        method: 'POST', body: JSON.stringify(body), credentials: 'omit', signal: current.controller.signal,
        headers: pg.auth({ 'content-type': 'application/json' }),
      });
      if (!res.ok) return void refused(await pg.apiError(res));
      const job = await res.json();
      current.id = job.id;
      jobBox.hidden = false;
      $('pg-media-link').textContent = job.id;
      $('pg-media-link').href = `/ui/jobs/${encodeURIComponent(job.id)}`;
      setStatus(job.status, job.queue_position ? `#${job.queue_position} in the queue` : '');
      await follow(job.id, current.controller.signal);
    } catch (err) {
      pg.showBox(errBox, err && err.message && !err.name ? err.message : pg.failure(err));
    } finally {
      current = null;
      busy(false);
    }
  });

  function refused(err) {
    pg.showBox(errBox, err.message);
    const p = err.param || '';
    const name = p.replace(/^(params|images|files)\./, '');
    const slot = aliasBox()?.querySelector(`input[type="file"][data-slot="${CSS.escape(name)}"]`);
    if (p === 'model') pg.fieldError('pg-media-model', err.message);
    else if (p === 'prompt') pg.fieldError('pg-media-prompt', err.message);
    else if (slot) pg.fieldError(slot.id, err.message);
    else if (p) pg.fieldError('pg-media-params', err.message);
  }

  async function follow(id, signal) {
    const res = await fetch(`/v1/jobs/${encodeURIComponent(id)}/events`, { headers: pg.auth({ accept: 'text/event-stream' }), credentials: 'omit', signal });
    if (!res.ok) throw await pg.apiError(res);
    for await (const frame of pg.sseFrames(res)) {
      let data;
      try { data = JSON.parse(frame.data); } catch { continue; }
      if (frame.event === 'queued') setStatus('queued', data.position ? `#${data.position} in the queue` : 'waiting for a box');
      else if (frame.event === 'running') setStatus('running', `on ${data.backend}`);
      else if (frame.event === 'progress') {
        setStatus('running');
        setProgress(data.progress);
        if (data.node) $('pg-media-where').textContent = data.step ? `${data.node} · step ${data.step.value}/${data.step.max}` : data.node;
      } else if (frame.event === 'preview') {
        void previewOf(id);
      } else if (['done', 'failed', 'cancelled'].includes(frame.event)) return finish(data.job);
    }
    // the stream ended without an end (a proxy, a restart): ask for the job itself
    const res2 = await fetch(`/v1/jobs/${encodeURIComponent(id)}`, { headers: pg.auth(), credentials: 'omit', signal });
    if (!res2.ok) throw await pg.apiError(res2);
    return finish(await res2.json());
  }

  async function finish(job) {
    setStatus(job.status, job.backend ? `on ${job.backend}` : '');
    if (job.status === 'done') setProgress(100);
    if (job.status === 'failed') pg.showBox(errBox, `The job failed: ${job.error ? `${job.error.code}: ${job.error.message}` : 'no reason given'}`);
    if (job.status === 'cancelled') pg.showBox(errBox, 'The job was cancelled.');
    const holder = $('pg-media-results');
    for (const r of job.results || []) {
      if (typeof r.url !== 'string' || !r.url.startsWith('/v1/jobs/')) continue;
      const figure = $('pg-result-template').content.firstElementChild.cloneNode(true);
      const url = await blobUrl(r.url);
      const media = r.kind === 'image' ? document.createElement('img') : r.kind === 'video' ? document.createElement('video') : r.kind === 'audio' ? document.createElement('audio') : null;
      if (media) {
        media.src = url;
        if (r.kind === 'image') media.alt = `Result ${r.n} of ${job.id}`; else { media.controls = true; media.setAttribute('aria-label', `Result ${r.n} (${r.kind})`); }
        figure.querySelector('.pg-out-media').append(media);
      }
      figure.querySelector('.pg-out-caption').textContent = `#${r.n} · ${r.kind} · ${r.mime}${r.width ? ` · ${r.width}×${r.height}` : ''}`;
      const download = figure.querySelector('.pg-out-download');
      download.href = url;
      download.download = `${job.id}-${r.n}.${(r.mime.split('/')[1] || 'bin').replace(/[^\w]/g, '')}`;
      holder.append(figure);
    }
    if (job.results && job.results.length) $('pg-media-preview-box').hidden = true;
  }

  $('pg-media-cancel').addEventListener('click', async () => {
    const job = current;
    if (!job) return;
    if (!job.id) return job.controller.abort();
    try {
      const res = await fetch(`/v1/jobs/${encodeURIComponent(job.id)}/cancel`, { method: 'POST', headers: pg.auth(), credentials: 'omit' });
      if (!res.ok) pg.showBox(errBox, (await pg.apiError(res)).message);
    } catch (err) {
      pg.showBox(errBox, pg.failure(err));
    }
  });
})();

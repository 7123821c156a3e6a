// Media jobs: a running job's detail page follows /ui/jobs/<id>/events. Progress moves the
// <progress> bar, previews swap the preview image; the end swaps in the parts the server
// rendered (status, parameters, outputs). Nothing here builds markup from data.
'use strict';

(() => {
  const root = document.querySelector('[data-job-live]');
  if (!root || !window.EventSource) return;
  const source = new EventSource(root.getAttribute('data-job-live'));
  const $ = (sel) => root.querySelector(sel);

  const swap = (parts) => {
    for (const [name, html] of Object.entries(parts || {})) {
      const target = root.querySelector(`[data-part="${CSS.escape(name)}"]`);
      if (target) target.innerHTML = html; // server-rendered, escaped by the template
    }
  };
  const setStatus = (status) => {
    const el = $('[data-job-status]');
    if (!el) return;
    el.className = `status big ${status}`;
    el.lastChild.textContent = status;
  };
  const setProgress = (value) => {
    const bar = $('[data-job-progress]');
    const label = $('[data-job-progress-label]');
    const pct = Math.max(0, Math.min(100, Math.round(Number(value) || 0)));
    if (bar) { bar.value = pct; bar.textContent = `${pct}%`; }
    if (label) label.textContent = `${pct}%`;
  };

  source.addEventListener('queued', (event) => {
    const { position } = JSON.parse(event.data);
    setStatus('queued');
    const el = $('[data-job-position]');
    if (el) el.textContent = position ? `#${position} in the queue` : 'waiting for a box';
  });
  source.addEventListener('running', (event) => {
    const { backend } = JSON.parse(event.data);
    setStatus('running');
    const el = $('[data-job-backend]');
    if (el) el.textContent = backend || '…';
  });
  source.addEventListener('progress', (event) => {
    const data = JSON.parse(event.data);
    setStatus('running');
    setProgress(data.progress);
    const node = $('[data-job-node]');
    if (node) node.textContent = data.step ? `${data.node || '–'} (step ${data.step.value}/${data.step.max})` : (data.node || '–');
    if (data.parts) swap(data.parts);
  });
  source.addEventListener('preview', (event) => {
    const { url } = JSON.parse(event.data);
    const img = $('[data-job-preview]');
    const box = $('[data-job-preview-box]');
    if (!img || typeof url !== 'string' || !url.startsWith('/ui/jobs/')) return;
    img.src = `${url}?t=${Date.now()}`;
    if (box) box.hidden = false;
  });
  const end = (event) => {
    const data = JSON.parse(event.data);
    source.close(); // else EventSource reconnects to a finished stream
    setProgress(data.progress);
    swap(data.parts);
    root.removeAttribute('data-job-live');
    root.setAttribute('data-job-ended', data.status);
  };
  for (const type of ['done', 'failed', 'cancelled']) source.addEventListener(type, end);
  // the session ended (logout, key rotated, role taken away): no reconnecting; the reload shows the login
  source.addEventListener('session-ended', () => { source.close(); window.location.reload(); });
  window.addEventListener('pagehide', () => source.close());
})();

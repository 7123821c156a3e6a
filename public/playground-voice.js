// Playground · Voice: POST /v1/audio/speech {model, input, voice, response_format}; the audio
// arrives as a blob, played inline and offered as a download.
'use strict';

(() => {
  const pg = window.gwPlayground;
  if (!pg) return;
  const { $ } = pg;
  const form = $('pg-voice-form');
  const errBox = $('pg-voice-error');
  let lastUrl = null;

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    pg.clearErrors(form);
    pg.showBox(errBox, '');
    const model = $('pg-voice-model').value;
    const input = $('pg-voice-input').value.trim();
    const voice = $('pg-voice-voice').value.trim();
    const format = $('pg-voice-format').value;
    let bad = false;
    if (!model) bad = pg.fieldError('pg-voice-model', 'Choose a speech model (load the models with your key first).');
    if (!input) bad = pg.fieldError('pg-voice-input', 'Write the text to speak.') || bad;
    if (bad) { form.querySelector('[aria-invalid]')?.focus(); return; }
    const body = { model, input, response_format: format };
    if (voice) body.voice = voice;
    const run = $('pg-voice-run');
    run.disabled = true;
    const started = performance.now();
    try {
      const res = await fetch('/v1/audio/speech', {
        method: 'POST', body: JSON.stringify(body), credentials: 'omit',
        headers: pg.auth({ 'content-type': 'application/json' }),
      });
      if (!res.ok) {
        const err = await pg.apiError(res);
        pg.showBox(errBox, err.message);
        if (err.param === 'model') pg.fieldError('pg-voice-model', err.message);
        else if (err.param === 'input') pg.fieldError('pg-voice-input', err.message);
        else if (err.param === 'voice') pg.fieldError('pg-voice-voice', err.message);
        return;
      }
      const blob = await res.blob();
      if (lastUrl) URL.revokeObjectURL(lastUrl);
      lastUrl = URL.createObjectURL(blob);
      $('pg-voice-audio').src = lastUrl;
      $('pg-voice-download').href = lastUrl;
      $('pg-voice-download').download = `speech.${format}`;
      $('pg-voice-meta').textContent = `${(blob.size / 1024).toFixed(1)} KiB · ${blob.type || 'audio'} · ${res.headers.get('x-gateway-backend') || '?'} · ${pg.ms(performance.now() - started)}`;
      $('pg-voice-out').hidden = false;
    } catch (err) {
      pg.showBox(errBox, pg.failure(err));
    } finally {
      run.disabled = false;
    }
  });
})();

/**
 * How a job's files are served back, over sockets on a fake ComfyUI: a raster image goes out
 * inline under the type its bytes showed, with `nosniff` and a sandboxing CSP; a file whose
 * type nothing sniffs (an input of a mesh loader, Load3D) is sent with whatever type the client
 * declared — so a `data:text/html` or `data:image/svg+xml` value would come back from the
 * gateway's own origin as a page. Such files are attachments, their type octet-stream.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { JobView } from '../src/media/service-types.ts';
import { workflow } from './helpers/comfy-workflows.ts';
import {
  bearer,
  call,
  createUser,
  imageModels,
  isTerminal,
  pngA,
  pollJob,
  startMediaRig,
  type MediaRig,
} from './helpers/media-gateway.ts';

describe("serving a job's files", () => {
  let rig: MediaRig;
  let key = '';

  before(async () => {
    // the inpaint workflow with a Load3D node whose `model_file` is the request's `mesh` file
    const wf = workflow('img2img_workflow_flux1_inpaint_api.json');
    wf['900'] = { class_type: 'Load3D', inputs: { model_file: '', image: '', width: 512, height: 512 } };
    rig = await startMediaRig({
      overrides: {
        image_models: {
          ...imageModels(),
          mesh: [{ backend: 'edit', workflow_json: wf, mapping: { mesh: { node: '900', field: 'model_file' } } }],
        },
      },
    });
    key = await createUser(rig.url, 'serving');
  });
  after(async () => rig?.close());

  const input0 = async (files: Record<string, string>, model = 'mesh') => {
    const body = { model, prompt: 'p', mode: 'async', files };
    const r = await call<JobView>(rig.url, 'POST', '/v1/generations', key, body);
    assert.equal(r.status, 202, JSON.stringify(r.body));
    await pollJob(rig.url, r.body.id, key, isTerminal);
    const res = await fetch(`${rig.url}/v1/jobs/${r.body.id}/input/0`, { headers: bearer(key) });
    assert.equal(res.status, 200);
    return { res, text: await res.text() };
  };
  const dataUri = (mime: string, text: string) => `data:${mime};base64,${Buffer.from(text).toString('base64')}`;

  test("a client's text/html for a mesh input comes back as an octet-stream attachment, never a page", async () => {
    const page = '<html><script>alert(document.domain)</script></html>';
    const { res, text } = await input0({ mesh: dataUri('text/html', page) });
    assert.equal(text, page, "the bytes are the client's, unchanged");
    assert.equal(res.headers.get('content-type'), 'application/octet-stream');
    assert.match(res.headers.get('content-disposition') ?? '', /^attachment; filename="job_[0-9a-f]{32}-in-0\.bin"$/);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.match(res.headers.get('content-security-policy') ?? '', /sandbox/);
  });

  test('so does an SVG (it can carry scripts); a glTF mesh keeps its type, as an attachment', async () => {
    const drawing = '<svg xmlns="http://www.w3.org/2000/svg"><script>1</script></svg>';
    const svg = await input0({ mesh: dataUri('image/svg+xml', drawing) });
    assert.equal(svg.res.headers.get('content-type'), 'application/octet-stream');
    assert.match(svg.res.headers.get('content-disposition') ?? '', /^attachment;/);
    const gltf = await input0({ mesh: dataUri('model/gltf+json', '{"asset":{"version":"2.0"}}') });
    assert.equal(gltf.res.headers.get('content-type'), 'model/gltf+json');
    assert.match(gltf.res.headers.get('content-disposition') ?? '', /^attachment;/);
  });

  test('a PNG input stays inline as image/png, nosniff (a PNG with HTML after it is no page either)', async () => {
    const png = await input0({ image: pngA.toString('base64') }, 'inpaint');
    assert.equal(png.res.headers.get('content-type'), 'image/png');
    assert.match(png.res.headers.get('content-disposition') ?? '', /^inline; filename="job_[0-9a-f]{32}-in-0\.png"$/);
    // a whole PNG with a page after its end (a PNG head and a page alone is refused: media-input-safety)
    const tricky = Buffer.concat([pngA, Buffer.from('<html><script>1</script></html>')]);
    const mixed = await input0({ image: tricky.toString('base64') }, 'inpaint');
    assert.equal(mixed.res.headers.get('content-type'), 'image/png');
    assert.equal(mixed.res.headers.get('x-content-type-options'), 'nosniff');
  });
});

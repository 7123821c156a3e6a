/** The fake ComfyUI's files: uploads (`/upload/image`, `/upload/mask`, renamed unless `overwrite`) and `/view`. */
import type { ServerResponse } from 'node:http';
import { contentTypeOf } from './comfyui-media.ts';
import { parseMultipart } from './comfyui-multipart.ts';
import type { ComfyCore } from './comfyui-execute.ts';
import { json, notFound, text } from './comfyui-http.ts';
import { fileKey } from './comfyui-state.ts';

export function upload(c: ComfyCore, body: Buffer, contentType: string | undefined, res: ServerResponse): void {
  const form = parseMultipart(body, contentType);
  const image = form?.files.image;
  if (!form || !image || image.filename === '') return text(res, 400, '400: Bad Request');
  const type = ['input', 'temp', 'output'].includes(form.fields.type ?? '') ? form.fields.type! : 'input';
  const subfolder = (form.fields.subfolder ?? '').replace(/^\/+|\/+$/g, '');
  if (subfolder.split('/').includes('..')) return text(res, 400, '400: Bad Request');
  const overwrite = form.fields.overwrite === 'true' || form.fields.overwrite === '1';
  let name = image.filename.split(/[\\/]/).pop()!;
  if (!overwrite) {
    const dot = name.lastIndexOf('.');
    const stem = dot > 0 ? name.slice(0, dot) : name;
    const ext = dot > 0 ? name.slice(dot) : '';
    let i = 1;
    for (;;) {
      const existing = c.s.files.get(fileKey(type, subfolder, name));
      if (!existing || existing.equals(image.data)) break; // same hash: reused
      name = `${stem} (${i})${ext}`;
      i++;
    }
  }
  c.s.files.set(fileKey(type, subfolder, name), image.data);
  c.s.uploads.set(subfolder ? `${subfolder}/${name}` : name, image.data);
  json(res, 200, { name, subfolder, type });
}

export function view(c: ComfyCore, query: URLSearchParams, res: ServerResponse): void {
  let filename = query.get('filename');
  if (!filename) return notFound(res);
  let type = query.get('type') || 'output';
  const annotated = /\s*\[(input|output|temp)\]$/.exec(filename);
  if (annotated) {
    type = annotated[1]!;
    filename = filename.slice(0, annotated.index);
  }
  if (filename.startsWith('/') || filename.includes('..')) return text(res, 400, '400: Bad Request');
  const subfolder = (query.get('subfolder') ?? '').replace(/^\/+|\/+$/g, '');
  if (subfolder.split('/').includes('..')) return text(res, 403, '403: Forbidden');
  const data = c.s.files.get(fileKey(type, subfolder, filename));
  if (!data) return notFound(res);
  res.writeHead(200, {
    'Content-Type': contentTypeOf(filename),
    'Content-Length': data.length,
    'Content-Disposition': `filename="${filename}"`,
  });
  res.end(data);
}

/** A small multipart/form-data parser for the fake ComfyUI's /upload/image. */

export interface MultipartFile {
  filename: string;
  contentType: string;
  data: Buffer;
}

export interface Multipart {
  fields: Record<string, string>;
  files: Record<string, MultipartFile>;
}

/** Parses `body`; undefined when the content type is not multipart or has no boundary. */
export function parseMultipart(body: Buffer, contentType: string | undefined): Multipart | undefined {
  if (!contentType || !/^multipart\/form-data/i.test(contentType)) return undefined;
  const m = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  const boundary = m?.[1] ?? m?.[2];
  if (!boundary) return undefined;
  const delimiter = Buffer.from(`--${boundary}`);
  const out: Multipart = { fields: {}, files: {} };
  let pos = body.indexOf(delimiter);
  while (pos >= 0) {
    let start = pos + delimiter.length;
    if (body.subarray(start, start + 2).toString() === '--') break;
    if (body.subarray(start, start + 2).toString() === '\r\n') start += 2;
    const next = body.indexOf(delimiter, start);
    if (next < 0) break;
    let end = next;
    if (body.subarray(end - 2, end).toString() === '\r\n') end -= 2;
    const part = body.subarray(start, end);
    const headEnd = part.indexOf('\r\n\r\n');
    if (headEnd >= 0) {
      const head = part.subarray(0, headEnd).toString('utf8');
      const data = part.subarray(headEnd + 4);
      const disposition = /content-disposition:([^\r\n]*)/i.exec(head)?.[1] ?? '';
      const name = /\bname="([^"]*)"/i.exec(disposition)?.[1];
      const filename = /\bfilename="([^"]*)"/i.exec(disposition)?.[1];
      const type = /content-type:\s*([^\r\n]*)/i.exec(head)?.[1]?.trim() ?? 'application/octet-stream';
      if (name !== undefined) {
        if (filename !== undefined) out.files[name] = { filename, contentType: type, data: Buffer.from(data) };
        else out.fields[name] = data.toString('utf8');
      }
    }
    pos = next;
  }
  return out;
}

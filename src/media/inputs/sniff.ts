/** A file's MIME type from its first bytes (magic numbers), for inputs and outputs alike. */

const ascii = (b: Uint8Array, at: number, text: string): boolean => {
  if (b.length < at + text.length) return false;
  for (let i = 0; i < text.length; i++) if (b[at + i] !== text.charCodeAt(i)) return false;
  return true;
};

const startsWith = (b: Uint8Array, bytes: number[]): boolean =>
  b.length >= bytes.length && bytes.every((x, i) => b[i] === x);

/** ISO-BMFF (`ftyp` box) brands that are not plain video. */
const FTYP_BRANDS: Record<string, string> = {
  'qt  ': 'video/quicktime',
  'M4A ': 'audio/mp4',
  'M4B ': 'audio/mp4',
  'M4P ': 'audio/mp4',
  'F4A ': 'audio/mp4',
  avif: 'image/avif',
  avis: 'image/avif',
  heic: 'image/heic',
  heix: 'image/heic',
  heim: 'image/heic',
  heis: 'image/heic',
  mif1: 'image/heif',
  msf1: 'image/heif',
};

/** BMP info-header sizes (BITMAPCOREHEADER … BITMAPV5HEADER): "BM" alone is too weak a signature. */
const BMP_DIB_SIZES = new Set([12, 16, 40, 52, 56, 64, 108, 124]);

/**
 * The MIME type the leading bytes announce, or undefined: PNG, JPEG, GIF, WebP, BMP, TIFF,
 * AVIF/HEIC, WAV, MP3 (ID3 tag or MPEG frame sync), AAC (ADTS), FLAC, Ogg, MP4/MOV/M4A
 * (`ftyp`), old QuickTime atoms, WebM/Matroska, GLB, binary FBX, PLY. Text formats without a
 * signature (OBJ, glTF JSON, ASCII STL) stay undefined.
 */
export function sniffMime(bytes: Uint8Array): string | undefined {
  const b = bytes;
  if (b.length < 4) return undefined;
  if (startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (startsWith(b, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (ascii(b, 0, 'GIF87a') || ascii(b, 0, 'GIF89a')) return 'image/gif';
  if (ascii(b, 0, 'RIFF')) {
    if (ascii(b, 8, 'WEBP')) return 'image/webp';
    if (ascii(b, 8, 'WAVE')) return 'audio/wav';
    return undefined;
  }
  if (
    ascii(b, 0, 'BM') &&
    b.length >= 18 &&
    b[6] === 0 &&
    b[7] === 0 &&
    b[8] === 0 &&
    b[9] === 0 &&
    BMP_DIB_SIZES.has(b[14] | (b[15] << 8) | (b[16] << 16) | (b[17] << 24))
  )
    return 'image/bmp';
  if (startsWith(b, [0x49, 0x49, 0x2a, 0x00]) || startsWith(b, [0x4d, 0x4d, 0x00, 0x2a])) return 'image/tiff';
  if (ascii(b, 0, 'fLaC')) return 'audio/flac';
  if (ascii(b, 0, 'OggS')) return 'audio/ogg';
  if (ascii(b, 0, 'ID3')) return 'audio/mpeg';
  if (ascii(b, 0, 'glTF')) return 'model/gltf-binary';
  if (ascii(b, 0, 'Kaydara FBX Binary')) return 'model/fbx';
  if (ascii(b, 0, 'ply\n') || ascii(b, 0, 'ply\r\n')) return 'model/ply';
  if (startsWith(b, [0x1a, 0x45, 0xdf, 0xa3])) {
    // EBML: the DocType (element 0x4282) says webm or matroska
    const head = Buffer.from(b.buffer, b.byteOffset, Math.min(b.length, 64)).toString('latin1');
    return head.includes('webm') ? 'video/webm' : 'video/x-matroska';
  }
  if (b.length >= 12 && ascii(b, 4, 'ftyp')) {
    const brand = String.fromCharCode(b[8], b[9], b[10], b[11]);
    return FTYP_BRANDS[brand] ?? 'video/mp4';
  }
  if (b.length >= 8 && (ascii(b, 4, 'moov') || ascii(b, 4, 'mdat') || ascii(b, 4, 'wide'))) return 'video/quicktime';
  if (b[0] === 0xff && (b[1] & 0xe0) === 0xe0) {
    const version = (b[1] >> 3) & 0x03; // 01 is reserved
    const layer = (b[1] >> 1) & 0x03; // 00: ADTS (AAC); else MPEG audio layer III/II/I
    if (layer === 0) return (b[1] & 0xf6) === 0xf0 ? 'audio/aac' : undefined;
    const bitrate = b[2] >> 4;
    const rate = (b[2] >> 2) & 0x03;
    if (version !== 1 && bitrate !== 0x0f && rate !== 0x03) return 'audio/mpeg';
  }
  return undefined;
}

/** A RIFF AVI file: not sniffed by sniffMime (nothing here makes or shows one), yet video loaders read it. */
export function isAvi(bytes: Uint8Array): boolean {
  return ascii(bytes, 0, 'RIFF') && ascii(bytes, 8, 'AVI ');
}

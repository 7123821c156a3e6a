/**
 * The image an empty `placeholder` slot gets: 8×8 opaque black, the same bytes every time, so
 * ComfyUI's upload (which reuses a file with the same name and hash) stores it once per server.
 */
export const PLACEHOLDER_IMAGE_NAME = 'gw_placeholder_8x8.png';

export const PLACEHOLDER_PNG_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAADElEQVR42mNgGB4AAADIAAGTvaWOAAAAAElFTkSuQmCC';

export function placeholderPng(): Uint8Array {
  return Uint8Array.from(Buffer.from(PLACEHOLDER_PNG_BASE64, 'base64'));
}

/**
 * sharp (libvips) loaded on first use: it adds ~27 MB to the resident size of a gateway that
 * may never touch an image.
 */
import type SharpType from 'sharp';

let loading: Promise<typeof SharpType> | undefined;

export function loadSharp(): Promise<typeof SharpType> {
  loading ??= import('sharp').then((m) => m.default);
  return loading;
}

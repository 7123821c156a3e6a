/**
 * A UDP listener on 127.0.0.1 port 0 standing in for a sleeping box's network card: it keeps
 * every packet that arrives and runs `onPacket` for each (a fake box starts answering then).
 */
import { createSocket } from 'node:dgram';

export interface WakeListener {
  port: number;
  packets: Buffer[];
  close(): Promise<void>;
}

export async function startWakeListener(onPacket?: (packet: Buffer) => void | Promise<void>): Promise<WakeListener> {
  const socket = createSocket('udp4');
  const packets: Buffer[] = [];
  socket.on('message', (msg) => {
    packets.push(msg);
    void onPacket?.(msg);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  return {
    port: socket.address().port,
    packets,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

/** The magic packet for `mac` as a box's card expects it: 6 × 0xFF, then the MAC's bytes 16 times. */
export function expectedPacket(mac: string): Buffer {
  const bytes = mac.split(/[:-]/).map((h) => parseInt(h, 16));
  return Buffer.from([...Array(6).fill(0xff), ...Array.from({ length: 16 }, () => bytes).flat()]);
}

/**
 * Sends magic packets over UDP (node:dgram): one socket per packet, bound, allowed to broadcast
 * when the address is a broadcast address, closed once the packet left or its deadline passed.
 * `close` ends every socket still open.
 */
import { createSocket, type Socket } from 'node:dgram';
import { isIPv6 } from 'node:net';
import { isBroadcastAddress } from './packet.ts';

/** How long one send may take (a host name to resolve included). */
const SEND_TIMEOUT_MS = 5000;

export type SendPacket = (packet: Buffer, address: string, port: number) => Promise<void>;

export class PacketSender {
  private readonly open = new Set<Socket>();

  /** Resolves once the packet left; rejects with the socket's error or at the deadline. */
  readonly send: SendPacket = (packet, address, port) =>
    new Promise<void>((resolve, reject) => {
      const socket = createSocket(isIPv6(address) ? 'udp6' : 'udp4');
      this.open.add(socket);
      let timer: NodeJS.Timeout | undefined;
      const finish = (err?: Error): void => {
        clearTimeout(timer);
        if (!this.open.delete(socket)) return;
        socket.close();
        if (err) reject(err);
        else resolve();
      };
      timer = setTimeout(
        () => finish(new Error(`the packet was not sent within ${SEND_TIMEOUT_MS} ms`)),
        SEND_TIMEOUT_MS,
      );
      timer.unref();
      socket.once('error', finish);
      socket.bind(0, () => {
        try {
          if (isBroadcastAddress(address)) socket.setBroadcast(true);
          socket.send(packet, port, address, (err) => finish(err ?? undefined));
        } catch (err) {
          finish(err as Error);
        }
      });
    });

  close(): void {
    for (const socket of this.open) socket.close();
    this.open.clear();
  }
}

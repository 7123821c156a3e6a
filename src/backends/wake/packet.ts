/**
 * The Wake-on-LAN magic packet, pure: six 0xFF bytes, then the box's six-byte MAC sixteen
 * times (102 bytes), and whether an address is one the socket must be allowed to broadcast to.
 */
import { isIPv4 } from 'node:net';

export const MAGIC_PACKET_BYTES = 6 + 16 * 6;

export function magicPacket(mac: Buffer): Buffer {
  if (mac.length !== 6) throw new RangeError(`a MAC has 6 bytes, got ${mac.length}`);
  const packet = Buffer.alloc(MAGIC_PACKET_BYTES, 0xff);
  for (let i = 0; i < 16; i++) mac.copy(packet, 6 + i * 6);
  return packet;
}

/**
 * 255.255.255.255, or an IPv4 address ending in .255 (a subnet's broadcast on the usual /24 and
 * /16 networks): the socket needs SO_BROADCAST for these. IPv6 has no broadcast (a multicast
 * address such as ff02::1 needs no flag).
 */
export function isBroadcastAddress(address: string): boolean {
  return isIPv4(address) && address.endsWith('.255');
}

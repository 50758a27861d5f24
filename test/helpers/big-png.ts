import { constants, deflateRawSync } from "node:zlib";

/** CRC-32 of PNG chunks (polynomial 0xEDB88320). */
const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Uint8Array): Buffer {
  const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

/**
 * A real PNG of `width` x `height` black pixels (1-bit greyscale) that stays small on disk and
 * cheap to make, however large its dimensions (30000x30000 is about 110 KB, made in well under a
 * second): the image data is every row zero, so one block of rows is deflated once with a full
 * flush (self-contained, byte-aligned) and repeated; the zlib stream is closed by hand.
 */
export function bigBlackPng(width: number, height: number): Buffer {
  const rowBytes = 1 + Math.ceil(width / 8); // filter byte + packed bits
  const rowsPerBlock = Math.min(height, 1000);
  const block = deflateRawSync(Buffer.alloc(rowBytes * rowsPerBlock), {
    level: 9,
    finishFlush: constants.Z_FULL_FLUSH,
  });
  const parts: Buffer[] = [Buffer.from([0x78, 0xda])]; // zlib header (deflate, 32K window, best compression)
  for (let rows = height; rows > 0; rows -= rowsPerBlock) {
    parts.push(
      rows >= rowsPerBlock
        ? block
        : deflateRawSync(Buffer.alloc(rowBytes * rows), { level: 9, finishFlush: constants.Z_FULL_FLUSH }),
    );
  }
  parts.push(Buffer.from([0x03, 0x00])); // an empty final block (fixed Huffman, end of block only)
  // Adler-32 of n zero bytes: a stays 1, b = n mod 65521.
  const total = rowBytes * height;
  const adler = Buffer.alloc(4);
  adler.writeUInt32BE((((total % 65521) << 16) | 1) >>> 0);
  parts.push(adler);

  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 1; // bit depth
  ihdr[9] = 0; // greyscale
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", Buffer.concat(parts)),
    chunk("IEND", new Uint8Array(0)),
  ]);
}

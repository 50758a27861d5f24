import type { Metadata } from "sharp";
import { sharp } from "./sharp";
import { badRequest, ApiError } from "../../core/errors";

/**
 * Reads an image's header (format, dimensions, pages; no pixels are decoded) whatever its size.
 * sharp applies its own default input limit (0x3FFF x 0x3FFF pixels) even to a header read, so a
 * 30000x30000 PNG would look unreadable; callers judge the dimensions against `--pixel-limit`
 * themselves and decode with `limitInputPixels` set to it.
 */
export function readImageHeader(input: string | Buffer, opts: { animated?: boolean } = {}): Promise<Metadata> {
  return sharp(input, { limitInputPixels: false, animated: opts.animated ?? false }).metadata();
}

/**
 * Turns an uploaded avatar or icon into a square PNG of `size` pixels. The type is taken from the
 * content (libvips sniffs it), never from the client; anything that is not a raster image is a 400,
 * an image of more than `pixelLimit` pixels a 422 `Source image too large` (before decoding).
 */
export async function squareImage(file: Blob, maxBytes: number, pixelLimit: number, size = 256): Promise<Buffer> {
  if (file.size > maxBytes) throw new ApiError(413, "Payload too large", { limit_bytes: maxBytes });
  const input = Buffer.from(await file.arrayBuffer());
  let header: Metadata;
  try {
    header = await readImageHeader(input);
  } catch {
    throw badRequest("Not an image", { field: "file" });
  }
  const format = header.format;
  if (!format || !["jpeg", "png", "webp", "gif", "tiff", "avif", "heif"].includes(format))
    throw badRequest("Unsupported image type", { field: "file", format: format ?? "unknown" });
  // Only the first frame is decoded: its size is what counts.
  const pixels = (header.width ?? 0) * (header.pageHeight ?? header.height ?? 0);
  if (pixels > pixelLimit) {
    throw new ApiError(422, "Source image too large", { field: "file", width: header.width, height: header.pageHeight ?? header.height, pixels, limit_pixels: pixelLimit });
  }
  try {
    return await sharp(input, { limitInputPixels: pixelLimit }).rotate().resize(size, size, { fit: "cover" }).png().toBuffer();
  } catch {
    throw badRequest("Image could not be read", { field: "file" });
  }
}

import type { Metadata } from "sharp";
import { sharp } from "./sharp";
import { ApiError, unprocessable } from "../../core/errors";

/**
 * Reads an image's header (format, dimensions, pages; no pixels are decoded) whatever its size.
 * sharp applies its own default input limit (0x3FFF x 0x3FFF pixels) even to a header read, so a
 * 30000x30000 PNG would look unreadable; callers judge the dimensions against `--pixel-limit`
 * themselves and decode with `limitInputPixels` set to it.
 */
export function readImageHeader(input: string | Buffer, opts: { animated?: boolean } = {}): Promise<Metadata> {
  return sharp(input, { limitInputPixels: false, animated: opts.animated ?? false }).metadata();
}

/** The reference's error of an avatar or icon upload that is no usable image, with the reason. */
const invalidUpload = (reason: string, info: Record<string, unknown> = {}) =>
  unprocessable("Invalid file upload", { field: "upload_file", reason, ...info });

/**
 * Turns an uploaded avatar or icon into a square PNG of `size` pixels. The type is taken from the
 * content (libvips sniffs it), never from the client; anything that is not a raster image of a
 * known type is a 422 `Invalid file upload` (the reference's error of these uploads) with the reason,
 * an image of more than `pixelLimit` pixels a 422 `Source image too large` (before decoding).
 */
export async function squareImage(file: Blob, maxBytes: number, pixelLimit: number, size = 256): Promise<Buffer> {
  if (file.size > maxBytes) throw new ApiError(413, "Payload too large", { limit_bytes: maxBytes });
  const input = Buffer.from(await file.arrayBuffer());
  let header: Metadata;
  try {
    header = await readImageHeader(input);
  } catch {
    throw invalidUpload("Not an image");
  }
  const format = header.format;
  if (!format || !["jpeg", "png", "webp", "gif", "tiff", "avif", "heif"].includes(format))
    throw invalidUpload("Unsupported image type", { format: format ?? "unknown" });
  // Only the first frame is decoded: its size is what counts.
  const pixels = (header.width ?? 0) * (header.pageHeight ?? header.height ?? 0);
  if (pixels > pixelLimit) {
    throw new ApiError(422, "Source image too large", {
      field: "upload_file",
      width: header.width,
      height: header.pageHeight ?? header.height,
      pixels,
      limit_pixels: pixelLimit,
    });
  }
  try {
    return await sharp(input, { limitInputPixels: pixelLimit })
      .rotate()
      .resize(size, size, { fit: "cover" })
      .png()
      .toBuffer();
  } catch {
    throw invalidUpload("Image could not be read");
  }
}

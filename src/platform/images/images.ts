import sharp from "sharp";
import { badRequest, ApiError } from "../../core/errors";

/**
 * Turns an uploaded avatar or icon into a square PNG of `size` pixels. The type is taken from the
 * content (libvips sniffs it), never from the client; anything that is not a raster image is a 400.
 */
export async function squareImage(file: Blob, maxBytes: number, pixelLimit: number, size = 256): Promise<Buffer> {
  if (file.size > maxBytes) throw new ApiError(413, "Payload too large", { limit_bytes: maxBytes });
  const input = Buffer.from(await file.arrayBuffer());
  let format: string | undefined;
  try {
    format = (await sharp(input, { limitInputPixels: pixelLimit }).metadata()).format;
  } catch {
    throw badRequest("Not an image", { field: "file" });
  }
  if (!format || !["jpeg", "png", "webp", "gif", "tiff", "avif", "heif"].includes(format))
    throw badRequest("Unsupported image type", { field: "file", format: format ?? "unknown" });
  try {
    return await sharp(input, { limitInputPixels: pixelLimit }).rotate().resize(size, size, { fit: "cover" }).png().toBuffer();
  } catch {
    throw badRequest("Image could not be read", { field: "file" });
  }
}

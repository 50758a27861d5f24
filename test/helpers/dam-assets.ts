import { eq } from "drizzle-orm";
import sharp from "sharp";
import { mutate } from "../../src/db/mutate";
import { assets, assetVersions } from "../../src/features/assets/assets.table";
import { newGid, now } from "../../src/core/ids";
import { originalKey, storageName } from "../../src/platform/storage/originals";
import type { TestServer } from "./server";

/**
 * Stores an original as the asset upload does (row in `assets`, file under `originals/`), so DAM
 * tests do not depend on the upload endpoint. Returns the storage pathname.
 */
export async function storeImage(
  srv: TestServer,
  projectGid: string,
  bytes: Buffer,
  opts: { name?: string; extension?: string; gid?: string; version?: number } = {},
): Promise<{ gid: string; pathname: string }> {
  const meta = await sharp(bytes)
    .metadata()
    .catch(() => undefined);
  const extension = opts.extension ?? (meta?.format === "jpeg" ? "jpg" : (meta?.format ?? "bin"));
  const gid = opts.gid ?? newGid();
  const version = opts.version ?? 1;
  const pathname = storageName(gid, version, extension);
  // Through the store the server uses (the data folder, or S3 with APIS_TEST_STORE=s3).
  await srv.ctx.storage.blobs.put(originalKey(projectGid, pathname), bytes);
  const t = now();
  const file = {
    extension,
    mime: meta ? `image/${meta.format === "svg" ? "svg+xml" : meta.format}` : "application/octet-stream",
    size: bytes.length,
    storageName: pathname,
    width: meta?.width ?? null,
    height: meta?.height ?? null,
    format: meta?.format ?? null,
    pages: meta?.pages ?? 1,
  };
  // Every statement awaited: on PostgreSQL a query's ending is a promise (src/db/pg/sqlite-api.ts).
  await mutate(srv.ctx.db, srv.ctx.hub, async (tx) => {
    const existing = await tx.select().from(assets).where(eq(assets.gid, gid)).get();
    if (!existing) {
      await tx
        .insert(assets)
        .values({
          gid,
          projectGid,
          parent: null,
          type: meta ? "image" : "file",
          name: opts.name ?? `image.${extension}`,
          version,
          ...file,
          createdOn: t,
          updatedOn: t,
        })
        .run();
    } else {
      // A new version: the current one becomes a kept earlier version.
      await tx
        .insert(assetVersions)
        .values({
          projectGid,
          assetGid: gid,
          version: existing.version,
          storageName: existing.storageName!,
          name: existing.name,
          extension: existing.extension,
          mime: existing.mime,
          size: existing.size,
          width: existing.width,
          height: existing.height,
          format: existing.format,
          pages: existing.pages,
          createdOn: existing.updatedOn,
          replacedOn: t,
        })
        .run();
      await tx
        .update(assets)
        .set({ version, ...file, updatedOn: t })
        .where(eq(assets.gid, gid))
        .run();
    }
  });
  return { gid, pathname };
}

/** A project owned by a fresh user; returns its gid and the owner's token. */
export async function projectOf(
  srv: TestServer,
  username: string,
): Promise<{ project: string; token: string; user: string }> {
  const u = await srv.user(username);
  const r = await srv.call("/api/projects/create", { body: { name: `${username}'s project` }, token: u.token });
  if (r.status !== 200) throw new Error(`project create failed: ${JSON.stringify(r.body)}`);
  return { project: r.body.result.project, token: u.token, user: u.gid };
}

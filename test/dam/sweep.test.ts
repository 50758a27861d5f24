import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import sharp from "sharp";
import { sweepStore } from "../../src/features/dam/dam.sweep.service";
import { projectOf, storeImage } from "../helpers/dam-assets";
import { flagsFor, STORES } from "../helpers/s3";
import { TestServer } from "../helpers/server";
import { eq } from "drizzle-orm";
import { projects } from "../../src/features/projects/projects.table";

describe.each(STORES)("the store sweep on %s", (store) => {
  let srv: TestServer;
  let project: string;
  let token: string;
  beforeAll(async () => {
    srv = await TestServer.start(await flagsFor(store, "sweep"));
    ({ project, token } = await projectOf(srv, "sweeper"));
  });
  afterAll(() => srv.stop());

  test("objects no row names (originals, transforms, project icons) are listed by the dry run and removed by the sweep; named ones stay", async () => {
    const png = await sharp({ create: { width: 40, height: 30, channels: 3, background: "#884422" } })
      .png()
      .toBuffer();
    const kept = await storeImage(srv, project, png);
    const made = await srv.call(`/dam/p/${project}/transform/${kept.pathname}/fit=20,20/type=png`, { token });
    expect(made.status).toBe(200);
    const blobs = srv.ctx.storage.blobs;
    const orphanOriginal = `files/projects/${project}/originals/zzzzzzzzzzzz~1.png`;
    const orphanMedia = `files/projects/${project}/media/gone@0000000000.png`;
    await blobs.put(orphanOriginal, png);
    await blobs.put(orphanMedia, png);
    // A project's icon stays; one no project names (its delete did not reach the store) goes.
    const icon = `${project}-kept.png`;
    await blobs.put(`files/icons/${icon}`, png);
    await srv.ctx.db.update(projects).set({ icon }).where(eq(projects.gid, project)).run();
    const orphanIcon = `files/icons/${project}-replaced.png`;
    await blobs.put(orphanIcon, png);

    const young = await sweepStore(srv.ctx, { dryRun: true });
    expect(young.orphans).toEqual([]); // within the grace period nothing is touched

    const dry = await sweepStore(srv.ctx, { dryRun: true, graceMs: -60_000 });
    expect(dry.orphans.sort()).toEqual([orphanIcon, orphanMedia, orphanOriginal].sort());
    expect(await blobs.stat(orphanOriginal)).toBeDefined();

    const swept = await sweepStore(srv.ctx, { graceMs: -60_000 });
    expect(swept.removed).toBe(3);
    expect(await blobs.stat(orphanIcon)).toBeUndefined();
    expect(await blobs.stat(`files/icons/${icon}`)).toBeDefined();
    expect(await blobs.stat(orphanOriginal)).toBeUndefined();
    expect(await blobs.stat(orphanMedia)).toBeUndefined();
    expect(await blobs.stat(`files/projects/${project}/originals/${kept.pathname}`)).toBeDefined();
    expect((await fetch(made.body.result.public_url)).status).toBe(200);
  });
});

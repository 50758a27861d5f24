import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import sharp from "sharp";
import { recordsWorld } from "./helpers";

let w: Awaited<ReturnType<typeof recordsWorld>>;
let rec = "";
let image = "";
let text = "";
let folder = "";
beforeAll(async () => {
  w = await recordsWorld();
  const photo = await w.field("photo", "image");
  const sheet = await w.field("sheet", "file");
  const gallery = await w.field("gallery", "imagelist");
  const d = (
    await w.okr("definitions/create", {
      name: "pictured",
      fields: [w.f.name, photo, sheet, gallery],
      titlefield: w.f.name,
    })
  ).result.definition;
  await w.okr("definitions/commit", { definition: d });
  rec = await w.create(w.root, { en: { name: "Pictured" } });
  await w.okr("records/definition/set", { record: rec, definition: d });
  const upload = async (content: Uint8Array | string, name: string) => {
    const fd = new FormData();
    fd.append("upload_file", new Blob([content]), name);
    const r = await w.srv.call(`/api/p/${w.project}/assets/upload`, { body: fd, token: w.owner.token });
    if (r.status !== 200) throw new Error(`upload answered ${r.status}: ${JSON.stringify(r.body)}`);
    return r.body.result.asset as string;
  };
  image = await upload(
    await sharp({ create: { width: 8, height: 8, channels: 3, background: "#20a040" } })
      .png()
      .toBuffer(),
    "cooler.png",
  );
  text = await upload("a data sheet", "sheet.txt");
  folder = (await w.okr("assets/root")).result.root;
}, 60_000);
afterAll(() => w.srv.stop());

const errorsOf = (r: { result: any }) =>
  (r.result["report.validation"] as any[]).filter((i) => i.level === "error").map((i) => [i.field, i.code]);

describe("image and file fields hold gids of the project's assets", () => {
  test("an image field takes an image, a file field any file; both are stored", async () => {
    const r = await w.okr("records/update", {
      record: rec,
      fields: { en: { photo: image, sheet: text, gallery: [image] } },
    });
    expect(errorsOf(r)).toEqual([]);
    expect((await w.get(rec)).fields.en).toMatchObject({ photo: image, sheet: text, gallery: [image] });
  });

  test("an unknown gid, a folder, or a file that is not an image in an image field is refused field by field", async () => {
    const r = await w.okr("records/update", {
      record: rec,
      fields: { en: { photo: text, sheet: folder, gallery: [image, "nosuchasset000000000"], name: "Still written" } },
    });
    expect(errorsOf(r)).toEqual([
      ["photo", "asset"],
      ["sheet", "asset"],
      ["gallery", "asset"],
    ]);
    expect((await w.get(rec)).fields.en).toMatchObject({
      photo: image,
      sheet: text,
      gallery: [image],
      name: "Still written",
    });
  });

  test("a deleted asset cannot be given to a record", async () => {
    await w.okr("assets/delete", { asset: image });
    const r = await w.okr("records/update", { record: rec, fields: { en: { gallery: [image] } } });
    expect(errorsOf(r)).toEqual([["gallery", "asset"]]);
  });
});

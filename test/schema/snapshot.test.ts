import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { schemaWorld } from "./helpers";

/**
 * The `get` operations and the project's schema dictionaries answer from an in-process snapshot
 * of the schema (src/features/schema/schema.generation.ts). Each test reads first (so the answer
 * is in the snapshot), changes the schema, and reads again: the second answer must be the new one
 * after every kind of change, and after a rolled-back batch the old one.
 */

let w: Awaited<ReturnType<typeof schemaWorld>>;
beforeAll(async () => {
  w = await schemaWorld();
});
afterAll(() => w.srv.stop());

const batch = (requests: unknown[]) =>
  w.srv.call(`/api/p/${w.project}/batch`, { token: w.owner.token, body: { requests } });
const fieldLabel = async (gid: string) => (await w.okr("fields/get", { field: gid })).data.fields[gid].label.en;
const initFields = async () =>
  (await w.srv.call(`/api/p/${w.project}/init`, { token: w.owner.token })).body.data.fields as Record<string, any>;

describe("the schema's cached answers are never stale", () => {
  test("fields/get after modify, commit, revert, save_as_new and delete", async () => {
    const f = await w.field("snap_width", "number", { label: { en: "Width" } });
    expect(await fieldLabel(f)).toBe("Width");
    const wc = (await w.okr("fields/modify", { field: f, label: { en: "Breadth" } })).result.field;
    expect(await fieldLabel(wc)).toBe("Breadth");
    expect(await fieldLabel(f)).toBe("Width");
    await w.okr("fields/commit", { field: wc });
    expect(await fieldLabel(f)).toBe("Breadth");
    expect((await w.api("fields/get", { field: wc })).status).toBe(422);
    const wc2 = (await w.okr("fields/modify", { field: f, label: { en: "Span" } })).result.field;
    expect(await fieldLabel(wc2)).toBe("Span");
    await w.okr("fields/revert", { field: wc2 });
    expect((await w.api("fields/get", { field: wc2 })).status).toBe(422);
    expect(await fieldLabel(f)).toBe("Breadth");
    const copy = (await w.okr("fields/copy", { field: f })).result.field;
    expect(await fieldLabel(copy)).toBe("Breadth");
    await w.okr("fields/delete", { field: copy });
    expect((await w.api("fields/get", { field: copy })).status).toBe(422);
  });

  test("definitions/get, classes/get and layouts/get follow changes of the item, its class and its layout", async () => {
    const f1 = await w.field("snap_a");
    const f2 = await w.field("snap_b");
    const cls = (await w.okr("classes/create", { name: "snap_group", fields: [f1] })).result.class;
    await w.okr("classes/commit", { class: cls });
    const def = (await w.okr("definitions/create", { name: "snap_def", classes: [cls] })).result.definition;
    await w.okr("definitions/commit", { definition: def });
    const getDef = async () => (await w.okr("definitions/get", { definition: def })).data;
    const first = await getDef();
    expect(first.definitions[def].classes).toEqual([cls]);
    const layout = first.definitions[def].layout;
    expect(Object.keys(first.layouts)).toEqual([layout]);
    expect((await w.okr("layouts/get", { layout })).data.layouts[layout].name).toBe(first.layouts[layout].name);
    expect((await w.okr("classes/get", { class: cls })).data.classes[cls].fields).toEqual([f1]);

    // A class change committed: classes/get says so at once.
    const cwc = (await w.okr("classes/fields/add", { class: cls, field: f2 })).result.class;
    expect((await w.okr("classes/get", { class: cls })).data.classes[cls].fields).toEqual([f1]);
    await w.okr("classes/commit", { class: cwc });
    expect((await w.okr("classes/get", { class: cls })).data.classes[cls].fields).toEqual([f1, f2]);

    // The definition's own change, its layout change, commit and revert.
    await w.okr("definitions/metadata/set", { definition: def, name: "snap.note", value: "draft" });
    expect((await getDef()).definitions[def].metadata).toEqual({});
    await w.okr("definitions/commit", { definition: def });
    expect((await getDef()).definitions[def].metadata).toMatchObject({ "snap.note": { value: "draft" } });
    await w.okr("definitions/layouts/modify", { definition: def, name: "renamed_layout" });
    await w.okr("definitions/commit", { definition: def });
    const after = await getDef();
    expect(after.layouts[after.definitions[def].layout].name).toBe("renamed_layout");
    expect(
      (await w.okr("layouts/get", { layout: after.definitions[def].layout })).data.layouts[
        after.definitions[def].layout
      ].name,
    ).toBe("renamed_layout");
    await w.okr("definitions/modify", { definition: def, label: { en: "Gone soon" } });
    await w.okr("definitions/revert", { definition: def });
    expect((await getDef()).definitions[def].label.en).toBe("");
    await w.okr("definitions/delete", { definition: def });
    expect((await w.api("definitions/get", { definition: def })).status).toBe(422);
  });

  test("inside a batch a step reads the batch's own change; when the batch rolls back, the next read answers the committed item again", async () => {
    const f = await w.field("snap_depth", "number", { label: { en: "Depth" } });
    expect(await fieldLabel(f)).toBe("Depth");
    expect((await initFields())[f].label.en).toBe("Depth");
    const r = await batch([
      { path: "fields/modify", body: { field: f, label: { en: "Uncommitted" } } },
      { path: "fields/commit", body: { field: f } },
      { path: "fields/get", body: { field: f } },
      { path: "fields/get", body: { field: "no-such-field" } },
    ]);
    expect(r.status).toBe(422);
    expect(r.body.result.info.batch).toEqual(["rolled_back", "rolled_back", "rolled_back", "failed"]);
    expect(await fieldLabel(f)).toBe("Depth");
    expect((await initFields())[f].label.en).toBe("Depth");

    // The same steps without the failing one: the batch's read saw its own change, and it stays.
    const ok = await batch([
      { path: "fields/modify", body: { field: f, label: { en: "Committed" } } },
      { path: "fields/commit", body: { field: f } },
      { path: "fields/get", body: { field: f } },
    ]);
    expect(ok.status).toBe(200);
    expect(ok.body.result.results[2].data.fields[f].label.en).toBe("Committed");
    expect(await fieldLabel(f)).toBe("Committed");
    expect((await initFields())[f].label.en).toBe("Committed");
  });

  test("a failed operation that wrote before failing leaves no trace in the next answer", async () => {
    const f = await w.field("snap_height", "number");
    const cls = (await w.okr("classes/create", { name: "snap_tall", fields: [f] })).result.class;
    await w.okr("classes/commit", { class: cls });
    expect((await w.okr("classes/get", { class: cls })).data.classes[cls].name).toBe("snap_tall");
    // classes/modify writes the working copy and then fails on the unknown field: one unit, rolled back.
    const bad = await w.api("classes/modify", { class: cls, name: "snap_renamed", fields: [f, "no-such-field"] });
    expect(bad.status).toBe(422);
    const dict = await initFields();
    expect(dict[f]).toBeDefined();
    const got = await w.okr("classes/get", { class: cls });
    expect(got.data.classes[cls]).toMatchObject({ name: "snap_tall", is_working_copy: false });
    expect(
      Object.values(
        (await w.srv.call(`/api/p/${w.project}/init`, { token: w.owner.token })).body.data.classes as Record<
          string,
          any
        >,
      ).filter((c) => c.original === cls),
    ).toEqual([]);
  });
});

describe("a snapshot's answer sent again", () => {
  test("is the same bytes and headers as the first answer, as the list form would encode it, and a member's access is still checked every time", async () => {
    const f = await w.field("snap_bytes", "number", { label: { en: "Depth" } });
    const raw = async (path: string, body: unknown, token = w.owner.token) => {
      const res = await fetch(`${w.srv.url}/api/p/${w.project}/${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return {
        status: res.status,
        type: res.headers.get("content-type"),
        auth: res.headers.get("authorization"),
        id: res.headers.get("x-request-id"),
        text: await res.text(),
      };
    };
    const first = await raw("fields/get", { field: f });
    const again = await raw("fields/get", { field: f });
    expect(first.status).toBe(200);
    expect(again.text).toBe(first.text);
    expect(again.type).toBe(first.type);
    expect(again.auth).toBe(`Bearer ${w.owner.token}`);
    expect(again.id).not.toBe(first.id);
    // The list form is encoded per request; both forms carry the same item and content type.
    const list = await raw("fields/get", { fields: [f] });
    expect(list.type).toBe(first.type);
    expect(JSON.parse(list.text).data.fields[f]).toEqual(JSON.parse(first.text).data.fields[f]);
    expect(JSON.parse(first.text)).toEqual({
      success: true,
      result: { field: f },
      data: { fields: { [f]: JSON.parse(list.text).data.fields[f] } },
    });
    // Access is checked on every request, not kept with the answer.
    expect((await raw("fields/get", { field: f }, w.bob.token)).text).toBe(first.text);
    expect((await raw("fields/get", { field: f }, w.stranger.token)).status).toBe(403);
  });
});

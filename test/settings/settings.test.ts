import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { features } from "../../src/features";
import type { Feature } from "../../src/features/feature";
import { call, scenarios } from "../helpers/scenario";
import { TestServer } from "../helpers/server";

let srv: TestServer;
let alice: { gid: string; token: string };
let bob: { gid: string; token: string };
let carol: { gid: string; token: string };
let project: string;

/** What the test feature's hooks were called with, and how many values its languageRemoved hook claims. */
const calls: string[] = [];
const probe: Feature = {
  name: "probe",
  hooks: {
    languageAdded: (_ctx, _tx, _log, p, language) => Promise.resolve((calls.push(`added ${p} ${language}`), 0)),
    languageRemoved: async (_ctx, _tx, log, p, language, keep) => {
      calls.push(`removed ${p} ${language}${keep ? " (kept)" : ""}`);
      if (keep) return 0;
      log.project(p, "UPDATE", "fields", "probefield");
      return 3;
    },
    settingRemoved: (_ctx, _tx, _log, p, kind, key) => Promise.resolve(void calls.push(`gone ${p} ${kind} ${key}`)),
  },
};

/** The path of an endpoint of the test's project. */
const at = (op: string) => `/api/p/${project}/${op}`;
const options = (r: { body: any }) => r.body.data["cc.projects"][project].options;

beforeAll(async () => {
  srv = await TestServer.start({ "rate-limit": "0" }, undefined, [...features, probe]);
  alice = await srv.user("alice");
  bob = await srv.user("bob");
  carol = await srv.user("carol");
  project = await srv.project(alice.token, "Catalogue");
  await srv.addMember(project, bob.gid);
});
afterAll(() => srv.stop());

describe("languages", () => {
  test("add takes a code of cc.languages, appends it and answers the project with the schema dictionaries", async () => {
    const since = await srv.ccCursor(bob.token);
    const r = await call(srv, at("languages/add"), bob.token, { language: "de" });
    expect(r.status).toBe(200);
    expect(r.body.result).toEqual({ project });
    expect(Object.keys(r.body.data).sort()).toEqual(["cc.projects", "classes", "definitions", "fields", "layouts"]);
    expect(options(r).languages).toEqual(["en", "de"]);
    expect(calls).toContain(`added ${project} de`);
    expect(await srv.ccItems(alice.token, since)).toContain(`UPDATE cc.projects ${project}`);
    await call(srv, at("languages/add"), alice, { language: "nl" });
    for (const bad of ["DE", "xx", "__proto__", "constructor"]) {
      const b = await call(srv, at("languages/add"), alice, { language: bad });
      expect([bad, b.status, b.body.result.info["Invalid parameter"]]).toEqual([bad, 400, "language"]);
    }
    const twice = await call(srv, at("languages/add"), alice, { language: "de" });
    expect(twice.status).toBe(422);
  });

  test("move puts a language before another or at the end; the first is the main language", async () => {
    expect(
      options(await call(srv, at("languages/move"), alice, { language: "nl", before_language: "en" })).languages,
    ).toEqual(["nl", "en", "de"]);
    expect(options(await call(srv, at("languages/move"), alice, { language: "nl" })).languages).toEqual([
      "en",
      "de",
      "nl",
    ]);
    expect((await call(srv, at("languages/move"), alice, { language: "fr" })).status).toBe(400);
    expect((await call(srv, at("languages/move"), alice, { language: "en", before_language: "fr" })).status).toBe(400);
  });

  test("remove keeps the values unless remove_values confirms it; the last language stays", async () => {
    calls.length = 0;
    const kept = await call(srv, at("languages/remove"), alice, { language: "nl" });
    expect(kept.body.result).toEqual({ project });
    expect(options(kept).languages).toEqual(["en", "de"]);
    // The hooks hear of every removal (they hide the language and announce what changed), told to keep the values.
    expect(calls).toEqual([`removed ${project} nl (kept)`]);
    calls.length = 0;
    const pSince = (await srv.call("/sync/cursors", { token: alice.token, body: { project } })).body.result.cursor;
    const gone = await call(srv, at("languages/remove"), alice, { language: "de", remove_values: true });
    expect(gone.body.result).toEqual({ project, removed_values: 3 });
    expect(calls).toEqual([`removed ${project} de`]);
    // The hook's own sync items are part of the same change.
    const items = (await srv.call("/sync/get", { token: alice.token, body: { project, cursor: pSince } })).body.result
      .sync as any[];
    expect(items.map((i) => `${i.action} ${i.data_type} ${i.data_key}`)).toEqual(["UPDATE fields probefield"]);
    const last = await call(srv, at("languages/remove"), alice, { language: "en", remove_values: true });
    expect(last.status).toBe(422);
    expect(last.body.result.info.reason).toMatch(/at least one language/);
    expect((await call(srv, at("languages/remove"), alice, { language: "de" })).status).toBe(400);
  });
});

describe("channels, orderings and fieldlists", () => {
  for (const kind of ["channel", "ordering", "fieldlist"] as const) {
    const plural = `${kind}s` as const;
    const ordered = `ordered${plural}`;

    test(`${plural}: create, update, move and delete are reflected in the options and announced`, async () => {
      const since = await srv.ccCursor(alice.token);
      const a = await call(srv, at(`${plural}/create`), bob.token, { name: "Webshop" });
      expect(a.status).toBe(200);
      const keyA = a.body.result[kind];
      expect(a.body.result).toEqual({ [kind]: keyA, project });
      expect(options(a)[plural][keyA]).toBe("Webshop");
      expect(options(a)[ordered].at(-1)).toBe(keyA);
      const keyB = (await call(srv, at(`${plural}/create`), alice, { name: "Catalog" })).body.result[kind];
      const renamed = await call(srv, at(`${plural}/update`), alice, { [kind]: keyA, name: "Shop NL" });
      expect(renamed.body.result).toEqual({ project });
      expect(options(renamed)[plural][keyA]).toBe("Shop NL");
      const before = options(await call(srv, at(`${plural}/move`), alice, { [kind]: keyB, [`before_${kind}`]: keyA }))[
        ordered
      ];
      expect(before.indexOf(keyB)).toBe(before.indexOf(keyA) - 1);
      const end = options(await call(srv, at(`${plural}/move`), alice, { [kind]: keyB }))[ordered];
      expect(end.at(-1)).toBe(keyB);
      calls.length = 0;
      const d = await call(srv, at(`${plural}/delete`), alice, { [kind]: keyA });
      expect(d.body.result).toEqual({ project });
      expect(Object.hasOwn(options(d)[plural], keyA)).toBe(false);
      expect(options(d)[ordered]).not.toContain(keyA);
      expect(calls).toEqual([`gone ${project} ${kind} ${keyA}`]);
      const items = await srv.ccItems(alice.token, since);
      expect(items.filter((i) => i === `UPDATE cc.projects ${project}`)).toHaveLength(6);
      // Unknown keys (inherited names too) and empty names are refused; nothing changes.
      for (const key of ["nope", "__proto__", "toString", keyA]) {
        const r = await call(srv, at(`${plural}/update`), alice, { [kind]: key, name: "x" });
        expect([key, r.status]).toEqual([key, 400]);
      }
      expect((await call(srv, at(`${plural}/create`), alice, { name: "  " })).body.result.code).toBe(1001);
      expect((await call(srv, at(`${plural}/delete`), alice, {})).body.result.info).toEqual({
        "Missing parameter": kind,
      });
    });
  }

  test("the __all__ channel cannot be renamed, moved, deleted, or have a channel moved before it", async () => {
    const main = (await srv.call("/api/projects/get", { token: alice.token, body: { project } })).body.data[
      "cc.projects"
    ][project].options.orderedchannels[1];
    for (const [op, body] of [
      ["update", { channel: "__all__", name: "x" }],
      ["move", { channel: "__all__" }],
      ["delete", { channel: "__all__" }],
      ["move", { channel: main, before_channel: "__all__" }],
    ] as const) {
      const r = await call(srv, at(`channels/${op}`), alice, body);
      expect([op, r.status]).toEqual([op, 400]);
    }
    const p = (await srv.call("/api/projects/get", { token: alice.token, body: { project } })).body.data["cc.projects"][
      project
    ].options;
    expect(p.channels.__all__).toBe("[all records]");
    expect(p.orderedchannels[0]).toBe("__all__");
  });

  describe("people outside the project are refused", () => {
    scenarios(
      () => srv,
      ["languages/add", "channels/create", "orderings/create", "fieldlists/create"].map((op) => ({
        name: `${op} by a stranger: 403`,
        caller: () => carol,
        path: () => `/api/p/${project}/${op}`,
        body: { language: "fr", name: "x" },
        status: 403,
      })),
    );
  });
});

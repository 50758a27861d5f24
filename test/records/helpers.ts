import { eq } from "drizzle-orm";
import { projects } from "../../src/features/projects/projects.table";
import { schemaWorld, type U } from "../schema/helpers";
import { SLOW_TEST_MS, TestServer, until } from "../helpers/server";

/**
 * A project with three languages (en, nl, de), two orderings, two channels, a small schema
 * (fields of several types, a `group` definition offering `article` for children) and an API user.
 */
export async function recordsWorld(flags: Record<string, string> = {}, dataDir?: string) {
  const w = await schemaWorld(flags, dataDir);
  // Awaited: on PostgreSQL a query's ending is a promise (src/db/pg/sqlite-api.ts).
  await w.srv.ctx.db
    .update(projects)
    .set({
      options: {
        languages: ["en", "nl", "de"],
        orderings: { ord: "Manual", alpha: "Alphabetic" },
        orderedorderings: ["ord", "alpha"],
        channels: { web: "Webshop", print: "Catalogue" },
        fieldlists: { shop: "Webshop" },
      },
    })
    .where(eq(projects.gid, w.project))
    .run();
  const f = {
    name: await w.field("name", "textline", { is_localized: true, is_required: true }),
    description: await w.field("description", "text", { is_localized: true }),
    artnr: await w.field("artnr", "textline", { options: { max_length: 20 } }),
    price: await w.field("price", "decimal", { options: { min: 0, decimals: 2 } }),
    stock: await w.field("stock", "number"),
    active: await w.field("active", "boolean"),
    brand: await w.field("brand", "textline", {
      options: {
        values: [
          { key: "caravell", label: { en: "Caravell", nl: "Caravell NL" } },
          { key: "dometic", label: { en: "Dometic" } },
        ],
      },
    }),
    tags: await w.field("tags", "textlist"),
  };
  const definition = async (name: string, body: Record<string, unknown>) => {
    const g = (await w.okr("definitions/create", { name, ...body })).result.definition as string;
    await w.okr("definitions/commit", { definition: g });
    return g;
  };
  const article = await definition("article", {
    fields: [f.name, f.description, f.artnr, f.price, f.stock, f.active, f.brand, f.tags],
    titlefield: f.name,
  });
  const other = await definition("other", { fields: [f.name, f.artnr, f.stock], titlefield: f.artnr });
  const group = await definition("group", { fields: [f.name], titlefield: f.name, childdefinitions: [article] });
  const key = await w.okr("apikeys/create", { name: "Feed" });
  const auth = await w.srv.call(`/api/p/${w.project}/auth`, { body: { api_key: key.result.apikey } });
  const apiUser: U = { gid: key.result.user, token: (auth.headers.get("authorization") ?? "").replace(/^Bearer /, "") };
  const rootAnswer = await w.okr("records/root");
  const root = rootAnswer.result.root as string;
  // The root's Base definition offers groups; groups offer articles.
  const base = rootAnswer.data.records[root].definition as string;
  await w.okr("definitions/childdefinitions/add", { definition: base, childdefinition: group });
  await w.okr("definitions/commit", { definition: base });
  /** Creates a record under `parent` and sets its definition (records/definition/set when not the default). */
  const create = async (parent: string, fields?: Record<string, unknown>) => {
    const r = await w.okr("records/create", { parent, ordering: "ord" });
    const gid = r.result.record as string;
    if (fields) await w.okr("records/update", { record: gid, fields });
    return gid;
  };
  const get = async (record: string, extra: Record<string, unknown> = {}) =>
    (await w.okr("records/get", { record, ...extra })).data.records[record];
  const children = async (record: string, extra: Record<string, unknown> = {}) =>
    (await w.okr("records/children", { record, ...extra })).result;
  return { ...w, f, article, other, group, base, apiUser, root, create, get, children };
}

/**
 * Starts a job through `start` (which answers its token) on a server made with
 * `"job-stop-grace": "0"` over `dataDir`, stops that server as soon as the job's first unit of work
 * has committed (its `records` sync items are published), starts a new server over the same data
 * and waits there for the job to be done. Answers the job row and the new server (to be stopped).
 */
export async function interruptedJob(srv: TestServer, dataDir: string, start: () => Promise<string>) {
  let stopped: Promise<void> | undefined;
  const unsubscribe = srv.ctx.hub.subscribe((items) => {
    if (stopped || !items.some((i) => i.data_type === "records")) return;
    // The job runner first: with no grace it interrupts the job at once (at its next step), so the
    // job cannot finish while the server closes its sockets.
    const jobs = srv.ctx.jobs.stop();
    stopped = jobs.then(() => srv.stop(true));
  });
  const token = await start();
  await until(() => stopped !== undefined, undefined, "the job's first unit");
  await stopped;
  unsubscribe();
  const restarted = await TestServer.start({ "job-stop-grace": "0" }, dataDir);
  try {
    // The whole job's work, which on PostgreSQL (a round trip per statement) and a loaded machine
    // takes longer than the usual patience: a guard against a hang, not a measure.
    const job = await until(
      async () => {
        const j = await restarted.ctx.jobs.get(token);
        return j?.status === "done" ? j : undefined;
      },
      SLOW_TEST_MS / 2,
      "the job done after the restart",
    );
    return { job, srv: restarted };
  } catch (err) {
    await restarted.stop();
    throw err;
  }
}

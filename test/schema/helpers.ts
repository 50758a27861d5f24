import { TestServer } from "../helpers/server";

export type U = { gid: string; token: string };

/** A server with a project owned by `owner`, a member `bob` and a `stranger`, plus small call helpers. */
export async function schemaWorld(flags: Record<string, string> = {}, dataDir?: string) {
  const srv = await TestServer.start(flags, dataDir);
  const [owner, bob, stranger] = await Promise.all([srv.user("olivia"), srv.user("bob"), srv.user("stranger")]);
  const project = await srv.project(owner.token, "Catalogue");
  await srv.addMember(project, bob.gid);
  /** POST /api/p/<project>/<path> as `who`. */
  const api = (path: string, body: unknown = {}, who: U = owner) =>
    srv.call(`/api/p/${project}/${path}`, { token: who.token, body });
  /** The result of a call that must succeed (throws with the answer otherwise). */
  const okr = async (path: string, body: unknown = {}, who: U = owner) => {
    const r = await api(path, body, who);
    if (r.status !== 200) throw new Error(`${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
    return r.body as { result: any; data: any };
  };
  const cursor = async (who: U = owner): Promise<number> =>
    (await srv.call("/sync/cursors", { token: who.token, body: { project } })).body.result.cursor;
  /** Project sync items after `since`, as "ACTION data_type data_key" lines. */
  const items = async (since: number, who: U = owner): Promise<string[]> => {
    const r = await srv.call("/sync/get", { token: who.token, body: { project, cursor: since } });
    return (r.body.result.sync as any[])
      .filter((i) => i.type === project)
      .map((i) => `${i.action} ${i.data_type} ${i.data_key}`);
  };
  /** Creates and commits a field; returns its gid. */
  const field = async (name: string, type = "textline", extra: Record<string, unknown> = {}) => {
    const g = (await okr("fields/create", { name, type, ...extra })).result.field;
    await okr("fields/commit", { field: g });
    return g as string;
  };
  return { srv, owner, bob, stranger, project, api, okr, cursor, items, field };
}

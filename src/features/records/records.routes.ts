import { Elysia, t, type TSchema } from "elysia";
import type { Ctx } from "../../context";
import { authMacro } from "../../http/auth";
import { ok } from "../../http/envelope";
import type { Actor } from "../schema/schema.core";
import { actorOf } from "../schema/schema.routes";
import * as S from "./records.service";
import * as T from "./records.tree";
import { searchRecords } from "./records.search";
import "./records.hooks";

const params = t.Object({ project: t.String() });
const opt = t.Optional;
const any = t.Optional(t.Unknown());
const langs = { language: any, languages: any };

type Answer = { result: Record<string, unknown>; data: Record<string, unknown> };
type Service = (ctx: Ctx, actor: Actor, projectGid: string, body: any) => Answer | Promise<Answer>;

/**
 * The records endpoints under `/api/p/<project>/records/`. Bodies are objects whose members the
 * services check themselves (so a wrong type is a 400 naming the member, never a 500); each route
 * calls one service.
 */
export function recordsRoutes(ctx: Ctx) {
  const app = new Elysia({ prefix: "/api/p/:project/records" }).use(authMacro(ctx));
  const route = (path: string, summary: string, members: Record<string, TSchema>, service: Service) =>
    app.post(path, async ({ params, body, caller }: any) => {
      const r = await service(ctx, actorOf(caller), params.project, body ?? {});
      return ok(r.result, r.data);
    }, { auth: true, params, body: t.Object({ ...langs, ...members }), detail: { summary, tags: ["records"] } } as any);

  const page = { "page.top": any, "page.size": any };
  route("/root", "The project's root record (made on first use)", {}, S.getRoot);
  route("/get", "One record (`record`) or several (`records`)", { record: any, records: any }, S.getRecords);
  route("/children", "One page of a record's children, by channel and ordering", { record: any, channel: any, ordering: any, ...page }, S.getChildren);
  route("/tree", "The expanded part of the tree as a flat, paged list", { expanded_records: any, ordering: any, ...page }, T.getTree);
  route("/create", "A new last child of `parent`", { parent: any, ordering: any }, S.createRecord);
  route("/update", "Values per language; answers report.validation", { record: any, fields: any }, S.updateRecord);
  const place = { record: any, parent: any, ordering: any, before_record: any };
  route("/move", "Move a record with its subtree", place, T.moveRecord);
  route("/orderings/set", "Raw positions of a record in some orderings", { record: any, orderings: any }, T.setOrderings);
  route("/copy", "Copy a record with its subtree (a job for large subtrees)", place, T.copyRecord);
  route("/shallow_copy", "Copy a record without its subtree", place, T.shallowCopy);
  route("/duplicate", "Copy a record right after itself", { record: any, ordering: any }, T.duplicateRecord);
  route("/link", "A linked copy kept in step with its canonical record", place, T.linkRecord);
  route("/unlink", "Make a linked copy a record of its own", { record: any }, T.unlinkRecord);
  route("/delete", "Delete a record with its subtree and links (undeletable)", { record: any }, T.deleteRecord);
  route("/undelete", "Restore a deleted record with its subtree and links", { record: any }, T.undeleteRecord);
  route("/permanent_delete", "Remove a deleted record for good (a job)", { record: any }, T.permanentDeleteRecord);
  route("/search", "Search records: full text `q` (+/- terms) and/or `filter`, best match first", { q: any, filter: any, ...page }, searchRecords);
  return app;
}

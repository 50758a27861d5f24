import { Elysia, t, type TSchema } from "elysia";
import type { Ctx } from "../../context";
import { authMacro, type Caller } from "../../http/auth";
import { ok } from "../../http/envelope";
import type { Actor } from "./schema.core";
import * as F from "./fields.service";
import { registerSchemaDictionaries } from "./schema.dictionaries";

const params = t.Object({ project: t.String() });
const gid = t.String({ minLength: 1 });
const opt = t.Optional;
const loose = t.Optional(t.Unknown());

/** The actor of a request: who is asking, for the services' own access checks. */
export const actorOf = (caller: Caller): Actor => ({ userGid: caller.user.gid, kind: caller.user.kind === "api" ? "api" : "person" });

type Answer = { result: Record<string, unknown>; data: Record<string, unknown> };
type Service<B> = (ctx: Ctx, actor: Actor, projectGid: string, body: B) => Answer;

const fieldMembers = {
  name: opt(t.String()),
  type: opt(t.String()),
  is_localized: loose,
  is_required: loose,
  unit: loose,
  options: loose,
  label: loose,
  initial: loose,
  metadata: loose,
};
const metadataSet = { name: t.String(), type: opt(t.String()), is_localized: loose, value: loose };

/**
 * The schema endpoints under `/api/p/<project>/`: fields, classes, definitions, layouts/get,
 * schema/search and schema/bulk. Each route checks the body's shape and calls one service.
 */
export function schemaRoutes(ctx: Ctx) {
  registerSchemaDictionaries();
  const app = new Elysia({ prefix: "/api/p/:project" }).use(authMacro(ctx));
  /** One POST route: body schema, summary, one service call answered in the envelope. */
  const route = <S extends TSchema>(path: string, tag: string, summary: string, body: S, service: Service<any>) =>
    app.post(path, ({ params, body, caller }: any) => {
      const r = service(ctx, actorOf(caller), params.project, body ?? {});
      return ok(r.result, r.data);
    }, { auth: true, params, body, detail: { summary, tags: [tag] } } as any);

  const one = (member: string) => t.Object({ [member]: gid });
  const f = "schema: fields";
  route("/fields/get", f, "One field (`field`) or several (`fields`)", t.Object({ field: opt(t.String()), fields: opt(t.Array(t.String())) }), F.getFields);
  route("/fields/create", f, "Create a field (new until committed); every member optional", t.Object(fieldMembers), F.createField);
  route("/fields/modify", f, "Modify a field through its working copy", t.Object({ field: gid, ...fieldMembers }), F.modifyField);
  route("/fields/commit", f, "Commit a field's working copy (or a new field); `dry_run: true` only reports what would change", t.Object({ field: gid, dry_run: opt(t.Boolean()) }), F.commitField);
  route("/fields/revert", f, "Drop a field's working copy (a new field is removed)", one("field"), F.revertField);
  route("/fields/save_as_new", f, "Save a field's working copy as a field of its own", one("field"), F.saveAsNewField);
  route("/fields/copy", f, "Copy a committed field as a new field", one("field"), F.copyField);
  route("/fields/delete", f, "Delete a field nobody uses", one("field"), F.deleteField);
  route("/fields/metadata/set", f, "Add or replace one metadata entry of a field", t.Object({ field: gid, ...metadataSet }), F.setFieldMetadata);
  route("/fields/metadata/clear", f, "Remove one metadata entry of a field", t.Object({ field: gid, name: t.String() }), F.clearFieldMetadata);
  return app;
}

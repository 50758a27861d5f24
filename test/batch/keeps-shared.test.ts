import { expect, test } from "bun:test";
import { hooksOf } from "../../src/features";

// The operations after which a batch keeps what its steps share (the access facts, the records'
// schema view) are declared on the operations themselves (`operation(..., { keepsShared: true })`);
// this pins the list, so a new operation that changes memberships, the project, its settings or its
// schema is not declared by mistake.
test("the operations that keep a batch's shared state are those that change no membership, project, setting or schema", () => {
  const keeping = [...hooksOf().operations.values()]
    .filter((op) => op.keepsShared)
    .map((op) => op.path)
    .sort();
  expect(keeping).toEqual(
    [
      "records/root",
      "records/get",
      "records/children",
      "records/tree",
      "records/create",
      "records/update",
      "records/move",
      "records/orderings/set",
      "records/copy",
      "records/shallow_copy",
      "records/duplicate",
      "records/link",
      "records/unlink",
      "records/delete",
      "records/undelete",
      "records/search",
      "records/worksheet",
      "records/channels/set",
      "records/channels/copy_from_parent",
      "records/channels/copy_up",
      "records/bulk/get",
      "queries/get",
      "queries/create",
      "queries/update",
      "queries/copy",
      "queries/delete",
      "jobs/get",
    ].sort(),
  );
});

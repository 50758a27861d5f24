/**
 * The front door of the users feature: what other features (and app/, cli/, http/) may use of it.
 * Everything else in src/features/users/ is its own; test/architecture.test.ts keeps other code
 * from importing past this file.
 */
export { apiUserForm, userFull, userShort } from "./users.forms";
export {
  createPerson,
  emailIssues,
  findByUsername,
  getUser,
  hasAdmin,
  hashPassword,
  listUsers,
  passwordIssues,
  setPassword,
  updateUser,
  usernameIssues,
  verifyLogin,
} from "./users.service";
export type { User } from "./users.service";

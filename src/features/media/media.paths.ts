/**
 * The public file paths, answered by Bun.serve's router (`mediaServeRoutes`) and the app alike.
 * On their own so the server's core can route them before the feature is loaded (src/app/server.ts).
 */
export const MEDIA_PATHS = {
  variant: "/media/p/:project/var/:file",
  original: "/media/p/:project/orig/:file",
  avatar: "/media/avatars/:file",
  icon: "/media/icons/:file",
} as const;

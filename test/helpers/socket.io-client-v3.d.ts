// socket.io-client v3 ships types only for require(); the tests use its ESM entry untyped.
declare module "socket.io-client-v3" {
  export const io: (url: string, opts?: Record<string, unknown>) => any;
}

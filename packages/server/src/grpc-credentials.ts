/**
 * What a `kind` of credentials (`ChannelCredentials`, `ServerCredentials`) option expects, said
 * for `value`, which is none of the @grpc/grpc-js that sluice uses. grpc-js tests credentials by
 * class, so ones another copy of it made (an app that installed another version) would fail
 * there too: said so, rather than "received object".
 */
export function expectedCredentials(value: unknown, kind: string, example: string): string {
  return madeBy(value, kind)
    ? `${kind} from the @grpc/grpc-js that @sluice/server uses, and these come from another copy of it: make them with the \`credentials\` and \`ServerCredentials\` @sluice/server exports, such as ${example}`
    : `${kind} from @grpc/grpc-js, such as ${example}`;
}

/** Whether `value` is an instance of a class named `kind`, of whichever copy. */
function madeBy(value: unknown, kind: string): boolean {
  let proto = typeof value === 'object' && value !== null ? Object.getPrototypeOf(value) : null;
  for (; proto !== null; proto = Object.getPrototypeOf(proto)) if (proto.constructor?.name === kind) return true;
  return false;
}

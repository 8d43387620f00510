import { createServer, type Socket } from 'node:net';
import type { Server, ServerCredentials } from '@grpc/grpc-js';

/** The gRPC port, listened on by the service itself and served by grpc-js. */
export interface GrpcListener {
  readonly port: number;
  /** Accepts no more connections; those open go on. */
  stopAccepting(): void;
  /** Accepts no more connections and ends every one still open, whatever state it is in. */
  destroy(): void;
}

/**
 * Cuts a connection the service has ended (its session closed, idle or not, a GOAWAY sent)
 * once its client has left its side open for `graceMs`. grpc-js ends such a socket and leaves
 * it to the client to close: a client that never did, or went on sending bytes (read and
 * thrown away), held it for good, one stalled mid-preface among them.
 */
function cutWhenHeld(socket: Socket, graceMs: number): void {
  let held: NodeJS.Timeout | undefined;
  socket.once('finish', () => {
    held = setTimeout(() => socket.destroy(), graceMs);
    held.unref();
  });
  socket.once('close', () => clearTimeout(held));
}

/**
 * Listens on `host:port` and hands each connection to `server` (grpc-js's connection
 * injector, TLS included when `credentials` say so), keeping the sockets. grpc-js ends a
 * session but does not close its socket: one whose client keeps its side open stays open for
 * as long as the client likes, and holds up a shutdown as long. So each is cut `graceMs` after
 * it was ended (`cutWhenHeld`), and `destroy()` cuts every one at once.
 */
export function listenGrpc(
  server: Server,
  credentials: ServerCredentials,
  { host, port, graceMs }: { host: string; port: number; graceMs: number },
): Promise<GrpcListener> {
  const injector = server.createConnectionInjector(credentials);
  const sockets = new Set<Socket>();
  const listener = createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    cutWhenHeld(socket, graceMs);
    injector.injectConnection(socket);
  });
  return new Promise((resolve, reject) => {
    const failed = (error: Error) => {
      injector.destroy();
      reject(error);
    };
    listener.once('error', failed);
    listener.listen(port, host, () => {
      listener.off('error', failed);
      const address = listener.address();
      resolve({
        port: typeof address === 'object' && address !== null ? address.port : port,
        stopAccepting: () => listener.close(),
        destroy: () => {
          listener.close();
          injector.destroy();
          for (const socket of sockets) socket.destroy();
        },
      });
    });
  });
}

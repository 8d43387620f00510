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
 * that its client keeps open. grpc-js ends such a socket and leaves it to the client to
 * close: a client that never did, or went on sending bytes (read and thrown away), held it for
 * good, one stalled mid-preface among them. The end itself is not to be heard here under TLS
 * (the socket grpc-js ends is the TLS socket over this one), but the service writes to every
 * connection it keeps at least once a `periodMs` (its ping): one it has written nothing to for
 * two whole periods is one it has ended.
 */
function cutWhenHeld(socket: Socket, periodMs: number): void {
  let written = socket.bytesWritten;
  let quietPeriods = 0;
  const watch = setInterval(() => {
    quietPeriods = socket.bytesWritten === written ? quietPeriods + 1 : 0;
    written = socket.bytesWritten;
    if (quietPeriods === 2) socket.destroy();
  }, periodMs);
  watch.unref();
  socket.once('close', () => clearInterval(watch));
}

/**
 * Listens on `host:port` and hands each connection to `server` (grpc-js's connection
 * injector, TLS included when `credentials` say so), keeping the sockets. grpc-js ends a
 * session but does not close its socket: one whose client keeps its side open stays open for
 * as long as the client likes, and holds up a shutdown as long. So each is cut once ended and
 * held (`cutWhenHeld`), and `destroy()` cuts every one at once.
 */
export function listenGrpc(
  server: Server,
  credentials: ServerCredentials,
  { host, port, periodMs }: { host: string; port: number; periodMs: number },
): Promise<GrpcListener> {
  const injector = server.createConnectionInjector(credentials);
  const sockets = new Set<Socket>();
  const listener = createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    cutWhenHeld(socket, periodMs);
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

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
 * Cuts a connection that has sent no byte for between one and two `silenceMs`. The service
 * pings every connection more often than that (`grpc.keepalive_time_ms`), so one that sends
 * nothing, not even the answer every HTTP/2 peer owes a ping, is dead or stalled.
 */
function cutWhenSilent(socket: Socket, silenceMs: number): void {
  let bytesRead = 0;
  const watch = setInterval(() => {
    if (socket.bytesRead === bytesRead) socket.destroy();
    bytesRead = socket.bytesRead;
  }, silenceMs);
  watch.unref();
  socket.once('close', () => clearInterval(watch));
}

/**
 * Listens on `host:port` and hands each connection to `server` (grpc-js's connection
 * injector, TLS included when `credentials` say so), keeping the sockets. grpc-js cannot end
 * a connection that has not begun HTTP/2 (a port scan, a client stalled mid-preface or
 * mid-handshake): closing or destroying such a session leaves its socket open, so it would
 * hold a socket for as long as its client liked, and hold up a shutdown as long. Such a
 * connection is cut once silent for `silenceMs`, and at once by `destroy()`.
 */
export function listenGrpc(
  server: Server,
  credentials: ServerCredentials,
  { host, port, silenceMs }: { host: string; port: number; silenceMs: number },
): Promise<GrpcListener> {
  const injector = server.createConnectionInjector(credentials);
  const sockets = new Set<Socket>();
  const listener = createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    cutWhenSilent(socket, silenceMs);
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

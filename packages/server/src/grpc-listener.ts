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
 * Listens on `host:port` and hands each connection to `server` (grpc-js's connection
 * injector, TLS included when `credentials` say so), keeping the sockets. grpc-js's own
 * listener cannot end a connection that has not begun HTTP/2 (a port scan, a client stalled
 * before its preface or mid-handshake): its forced shutdown destroys sessions, and such a
 * session's socket stays open, so shutdown waited on it for as long as the client held it.
 */
export function listenGrpc(
  server: Server,
  credentials: ServerCredentials,
  host: string,
  port: number,
): Promise<GrpcListener> {
  const injector = server.createConnectionInjector(credentials);
  const sockets = new Set<Socket>();
  const listener = createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
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

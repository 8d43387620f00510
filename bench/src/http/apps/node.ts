import { createServer } from 'node:http';
import { body, type StartApp } from './app.js';

/** The ceiling: Node's own HTTP server with no framework and no limiter. */
export const startNode: StartApp = async (_setup, port) => {
  const payload = JSON.stringify(body);
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
    res.end(payload);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return () => new Promise((resolve) => server.close(() => resolve()));
};

// The @grpc/grpc-js that sluice's client and server use: credentials another copy of it made
// (an app that installed another version) are not theirs.
export { credentials, ServerCredentials } from '@grpc/grpc-js';
export type { ServiceClient, ServiceClientOptions } from './client/service-client.js';
export { createServiceClient } from './client/service-client.js';
export type { DecisionServer } from './decision-server.js';
export { createDecisionServer } from './decision-server.js';
export type { Level, LogFields, ServiceLog } from './log.js';
export { createServiceLog } from './log.js';
export { PROTO_DIR } from './proto.js';
export { REQUEST_LIMITS } from './request-checks.js';
export type { RulesSource } from './rules-source.js';
export type { DecisionServerOptions } from './server-options.js';
export type { SluiceStatusMetadata } from './sluice-metadata.js';

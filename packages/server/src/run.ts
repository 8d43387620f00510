import { main } from './cli.js';

// Exit explicitly: after a graceful stop nothing is left to wait for.
process.exit(await main(process.argv.slice(2)));

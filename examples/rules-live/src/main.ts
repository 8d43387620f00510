import { fileURLToPath } from 'node:url';
import { watchRules } from '@sluice/rules';
import { createApp } from './app.js';

const path = process.env.RULES ?? fileURLToPath(new URL('../rules', import.meta.url));
const rules = watchRules(path, {
  onReload: (set) => console.log(`rules reloaded: ${set.rules.length} rules from ${set.sources.join(', ')}`),
  onError: (error) => console.error(`${error.message}\nThe rules in force stay as they were.`),
});
const app = await createApp(rules);
app.addHook('onClose', () => rules.close());
const port = Number(process.env.PORT ?? 3000);
await app.listen({ port, host: '127.0.0.1' });
console.log(`rules-live on http://127.0.0.1:${port}, rules from ${path}`);
console.log(`try: curl -i http://127.0.0.1:${port}/search   then edit a limit in ${path} and try again`);

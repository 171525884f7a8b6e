import { join } from 'node:path';
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { bundleFunctions } from './bundling';
import { functionEntries, ROOT } from './functions';
import { LoupeStack } from './stack';

/**
 * `cdk synth` / `cdk deploy`: bundles every function of the manifests into dist/ (same settings as
 * `npm run build`), then synthesizes the stack. Works offline; no AWS account is needed to synthesize.
 * Context: stackName (default Loupe), publicUrl (custom domain base URL), throttleRate, throttleBurst.
 */
const app = new App();
const context = (key: string) => app.node.tryGetContext(key) as string | undefined;
const bundleRoot = join(ROOT, 'dist');
const functions = functionEntries();
await bundleFunctions(functions, bundleRoot);

new LoupeStack(app, context('stackName') ?? 'Loupe', {
  bundleRoot,
  functions,
  publicUrl: context('publicUrl'),
  throttlingRateLimit: context('throttleRate') ? Number(context('throttleRate')) : undefined,
  throttlingBurstLimit: context('throttleBurst') ? Number(context('throttleBurst')) : undefined,
  description: 'Loupe: databases in plain language, safe SQL, dashboards and workflows over a JSON API',
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
app.synth();

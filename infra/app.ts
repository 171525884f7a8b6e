import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { bundleFunctions } from './bundling';
import { functionEntries, ROOT } from './functions';
import { readDeploymentSettings } from './settings';
import { LoupeStack } from './stack';

/**
 * `cdk synth` / `cdk deploy`: bundles every function of the manifests into dist/ (same settings as
 * `npm run build`), then synthesizes the stack. Works offline; no AWS account is needed to synthesize.
 * Context: the deployment settings of infra/settings.ts (documented in the README).
 */
const app = new App();
const bundleRoot = join(ROOT, 'dist');
const functions = functionEntries();
// Settings first: a bad value stops synth before the (slower) bundling.
const { stackName, ...settings } = readDeploymentSettings((key) => app.node.tryGetContext(key), functions);
await bundleFunctions(functions, bundleRoot);
// The web console, served by CloudFront beside the API (built here when missing, like `npm start` does).
const consoleDir = join(ROOT, 'console', 'dist');
if (!existsSync(join(consoleDir, 'index.html')))
  execFileSync('npm', ['run', 'build:console'], { cwd: ROOT, stdio: 'inherit' });

new LoupeStack(app, stackName, {
  bundleRoot,
  consoleDir,
  functions,
  settings,
  description: 'Loupe: databases in plain language, safe SQL, dashboards and workflows over a JSON API',
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
app.synth();

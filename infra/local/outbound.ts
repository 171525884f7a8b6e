import { announceDevLoopbackHttp } from '../../shared/outbound/dev-loopback';
import { announceOutboundTestHosts } from '../../shared/outbound/test-hosts';
import { startupTasks } from './startup';

/**
 * LOUPE_OUTBOUND_TEST_HOSTS (test only) is validated and announced loudly when the local runtime starts,
 * so a bad value stops the start and a set value is never silent; so is LOUPE_DEV_ALLOW_LOOPBACK_HTTP.
 */
startupTasks.push(async (env) => {
  announceOutboundTestHosts(env.log);
  announceDevLoopbackHttp(env.log);
  return undefined;
});

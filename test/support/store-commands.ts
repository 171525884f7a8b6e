/**
 * Every store command the requests of one organization make, as `<command> <item>`: the key lookup
 * (KEYHASH), the connection item (CONN), a history entry (QH#), the rate-limit window (RATE), ... The local
 * runtime's queue and scheduler poll the same store meanwhile; their partitions are left out (undefined).
 */
export function describeCommand(orgId: string, operation: string, sent: unknown): string | undefined {
  const input = sent as {
    Key?: { pk: string; sk: string };
    Item?: { pk: string; sk: string };
    ExpressionAttributeValues?: Record<string, unknown>;
  };
  const pk = input.Key?.pk ?? input.Item?.pk ?? String(input.ExpressionAttributeValues?.[':pk'] ?? '');
  const sk = input.Key?.sk ?? input.Item?.sk ?? '';
  if (!pk.startsWith('KEYHASH#') && !pk.startsWith(`ORG#${orgId}`)) return undefined;
  const item = pk.startsWith('KEYHASH#')
    ? 'KEYHASH'
    : sk
      ? sk.split('#')[0]
      : `${pk.split('#')[2] ?? 'ORG'} partition`;
  return `${operation.replace(/Item$/, '')} ${item}`;
}

/**
 * The one table definition, used by the CDK stack and by the local runtime (which creates it in
 * dynalite). Single-table design: every tenant key starts with `ORG#<orgId>`.
 */
export const mainTable = {
  partitionKey: 'pk',
  sortKey: 'sk',
  ttlAttribute: 'ttl',
  indexes: [{ name: 'gsi1', partitionKey: 'gsi1pk', sortKey: 'gsi1sk' }],
} as const;

/** The CreateTable input for the local store (dynalite) and for the operator tool's checks. */
export function createTableInput(tableName: string) {
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST' as const,
    AttributeDefinitions: [
      { AttributeName: 'pk', AttributeType: 'S' as const },
      { AttributeName: 'sk', AttributeType: 'S' as const },
      { AttributeName: 'gsi1pk', AttributeType: 'S' as const },
      { AttributeName: 'gsi1sk', AttributeType: 'S' as const },
    ],
    KeySchema: [
      { AttributeName: 'pk', KeyType: 'HASH' as const },
      { AttributeName: 'sk', KeyType: 'RANGE' as const },
    ],
    GlobalSecondaryIndexes: mainTable.indexes.map((ix) => ({
      IndexName: ix.name,
      KeySchema: [
        { AttributeName: ix.partitionKey, KeyType: 'HASH' as const },
        { AttributeName: ix.sortKey, KeyType: 'RANGE' as const },
      ],
      Projection: { ProjectionType: 'ALL' as const },
    })),
  };
}

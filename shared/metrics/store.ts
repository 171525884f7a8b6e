import { db, strip } from '../platform/db/store';
import { nameGuard } from '../saved-queries/name-guard';

export interface MetricRecord {
  id: string;
  orgId: string;
  name: string;
  description: string | null;
  formula: string;
  connectionId: string | null;
  unit: string | null;
  dimensions: string | null;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

/** Keys: `ORG#o / METRIC#<id>`; the unique-name guard `ORG#o / METRICNAME#<normalized name>`. */
const pk = (orgId: string) => `ORG#${orgId}`;
const sk = (id: string) => `METRIC#${id}`;

const get = async (orgId: string, id: string) => {
  const item = await db.get(pk(orgId), sk(id));
  return item ? (strip(item) as unknown as MetricRecord) : undefined;
};

export const metricNames = nameGuard('METRIC', async (orgId, id) => (await get(orgId, id))?.name);

export const metricStore = {
  get,

  async list(orgId: string): Promise<MetricRecord[]> {
    const items = await db.query({ pk: pk(orgId), prefix: 'METRIC#' });
    return items.map((i) => strip(i) as unknown as MetricRecord);
  },

  async put(r: MetricRecord): Promise<void> {
    await db.put({ pk: pk(r.orgId), sk: sk(r.id), type: 'metric', ...r }, { ifAbsent: true });
  },

  /** Applies changes if the record still has `expectedName` (see savedQueryStore.update). */
  async update(
    orgId: string,
    id: string,
    expectedName: string,
    changes: Partial<Omit<MetricRecord, 'id' | 'orgId' | 'createdBy' | 'createdAt'>>,
  ): Promise<MetricRecord | undefined> {
    const set = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined));
    const item = await db.patch(pk(orgId), sk(id), set, {
      condition: '#n = :expected',
      names: { '#n': 'name' },
      values: { ':expected': expectedName },
    });
    return item ? (strip(item) as unknown as MetricRecord) : undefined;
  },

  async delete(orgId: string, id: string): Promise<boolean> {
    return db.delete(pk(orgId), sk(id), { ifExists: true });
  },
};

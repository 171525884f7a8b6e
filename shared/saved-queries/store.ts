import { db, strip } from '../platform/db/store';
import { nameGuard } from './name-guard';
import type { ParamDef } from './values';

export interface SavedQueryRecord {
  id: string;
  orgId: string;
  connectionId: string;
  name: string;
  description: string | null;
  query: string;
  parameters: ParamDef[];
  tags: string | null;
  isPublic: boolean;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
}

/** Keys: `ORG#o / SQ#<id>`; the unique-name guard `ORG#o / SQNAME#<normalized name>`. */
const pk = (orgId: string) => `ORG#${orgId}`;
const sk = (id: string) => `SQ#${id}`;

const get = async (orgId: string, id: string) => {
  const item = await db.get(pk(orgId), sk(id));
  return item ? (strip(item) as unknown as SavedQueryRecord) : undefined;
};

export const savedQueryNames = nameGuard('SQ', async (orgId, id) => (await get(orgId, id))?.name);

export const savedQueryStore = {
  get,

  async list(orgId: string): Promise<SavedQueryRecord[]> {
    const items = await db.query({ pk: pk(orgId), prefix: 'SQ#' });
    return items.map((i) => strip(i) as unknown as SavedQueryRecord);
  },

  async put(r: SavedQueryRecord): Promise<void> {
    await db.put({ pk: pk(r.orgId), sk: sk(r.id), type: 'saved-query', ...r }, { ifAbsent: true });
  },

  /**
   * Applies changes if the record still has `expectedName` (a concurrent rename makes this fail and
   * return undefined, so the caller never releases a name it does not hold).
   */
  async update(
    orgId: string,
    id: string,
    expectedName: string,
    changes: Partial<Omit<SavedQueryRecord, 'id' | 'orgId' | 'createdBy' | 'createdAt'>>,
  ): Promise<SavedQueryRecord | undefined> {
    const set = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined));
    const item = await db.patch(pk(orgId), sk(id), set, {
      condition: '#n = :expected',
      names: { '#n': 'name' },
      values: { ':expected': expectedName },
    });
    return item ? (strip(item) as unknown as SavedQueryRecord) : undefined;
  },

  async delete(orgId: string, id: string): Promise<boolean> {
    return db.delete(pk(orgId), sk(id), { ifExists: true });
  },
};

import { MemoryStore } from '@corral/core';
import { describeStoreConformance } from '../../../test/store-conformance.js';

describeStoreConformance('MemoryStore', async () => {
  const store = new MemoryStore();
  return { store, cleanup: () => store.close() };
});

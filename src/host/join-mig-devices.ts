import type {ListGpus} from './parse-list-gpus.js'
import type {SmiTable} from './parse-smi-table.js'
import type {MigDevice} from './types.js'

/**
 * Gives each MIG UUID of `nvidia-smi -L` its GI and CI IDs from the default table. -L numbers MIG devices by
 * device index, not by GI ID, so "the UUID of GI 7" is only known through the table's "MIG Dev" column.
 * A device the table does not show keeps null IDs rather than a guess.
 */
export function joinMigDevices(listed: ListGpus, table: SmiTable): MigDevice[] {
  return listed.migDevices.map((device) => {
    const row = table.migDevices.find((candidate) => candidate.gpuIndex === device.gpuIndex && candidate.deviceIndex === device.deviceIndex)
    return {
      gpuIndex: device.gpuIndex,
      deviceIndex: device.deviceIndex,
      profileName: device.profileName,
      uuid: device.uuid,
      gpuInstanceId: row?.gpuInstanceId ?? null,
      computeInstanceId: row?.computeInstanceId ?? null,
    }
  })
}

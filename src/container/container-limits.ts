/**
 * What a member's session container may take on a shared box: memory (swap included), processes, and a
 * ceiling on /dev/shm, from the box's configuration (core/box-config.ts, with its defaults). Root's own sessions and a
 * sandbox user's have none. An --shm-size over the ceiling is refused before anything is contacted.
 */
import {type BoxConfig, type ContainerLimits, containerLimitsOf} from '../core/box-config.js'
import {ContainerError} from '../core/errors.js'

export type {ContainerLimits}

/** The box's limits for a member asking for `shmSizeBytes` of /dev/shm; SHM_SIZE_NOT_ALLOWED (exit 4) above the ceiling. */
export function memberContainerLimits(config: BoxConfig, shmSizeBytes: number | null): ContainerLimits {
  const limits = containerLimitsOf(config)
  if (shmSizeBytes !== null && limits.shmSizeMaxBytes !== null && shmSizeBytes > limits.shmSizeMaxBytes) {
    throw new ContainerError(
      'SHM_SIZE_NOT_ALLOWED',
      `--shm-size ${gib(shmSizeBytes)}: this box lets a session have at most ${gib(limits.shmSizeMaxBytes)} of /dev/shm`,
      {
        exit: 4,
        fix: [`ask for at most ${gib(limits.shmSizeMaxBytes)}`, 'or ask the administrator: gpu-cosplay system install --shm-size-max SIZE'],
      },
    )
  }
  return limits
}

function gib(bytes: number): string {
  return `${Math.round((bytes / 1024 ** 3) * 100) / 100} GiB`
}

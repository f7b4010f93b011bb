import {costumeEnv} from '../plan/costume-env.js'
import {comment, type ExportInput, headerLines, hostGpuOf, physicalMiBOf} from './export-input.js'
import {describeSettings, gpuWideSettings, leaseHoldArgv, leaseReleaseArgv} from './gpu-wide-lease.js'
import {dumpMigParted, dumpYaml, migPartedConfig} from './render-mig-parted.js'
import {shellLine} from '../core/shell-words.js'
import {SHARED_STATE_DIR} from '../core/names.js'

/** The ConfigMap name the GPU operator's ClusterPolicy points its MIG manager at (spec.migManager.config.name). */
export const MIG_CONFIG_MAP = 'gpu-cosplay-mig-config'
export const GPU_OPERATOR_NAMESPACE = 'gpu-operator'

/**
 * Kubernetes manifests: the MIG manager's ConfigMap, a lease DaemonSet when the plan needs GPU-wide
 * settings, and the Pod wearing the costume. Documents in that order, keys in a fixed order.
 */
export function renderK8s(input: ExportInput): string {
  const podName = `cosplay-${input.plan.target.key.replace(/_/g, '-')}`
  const settings = gpuWideSettings(input.plan, input.hostModel)
  const docs: string[] = []
  if (input.layout) {
    docs.push(
      dumpYaml({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {name: MIG_CONFIG_MAP, namespace: GPU_OPERATOR_NAMESPACE},
        data: {'config.yaml': dumpMigParted(migPartedConfig(input.layout, input.hostModel, input.label))},
      }),
    )
  }
  if (settings) docs.push(dumpYaml(leaseDaemonSet(input, settings)))
  docs.push(dumpYaml(pod(input, podName)))
  return `${comment(notes(input, podName))}\n${docs.map((d) => `---\n${d}`).join('')}`
}

function notes(input: ExportInput, podName: string): string[] {
  const {layout, label, plan} = input
  const settings = gpuWideSettings(plan, input.hostModel)
  const lines = headerLines(input)
  if (layout && plan.mig) {
    lines.push(
      '',
      `The GPU operator's MIG manager lays out each GPU of a node labelled nvidia.com/mig.config=${label}`,
      `(${Object.entries(layout.migDevices)
        .map(([p, n]) => `${n} x ${p}`)
        .join(', ')}). A cluster admin runs:`,
      '  kubectl apply -f THIS_FILE',
      `  kubectl patch clusterpolicies.nvidia.com/cluster-policy --type merge -p '{"spec":{"mig":{"strategy":"${input.migStrategy}"},"migManager":{"config":{"name":"${MIG_CONFIG_MAP}"}}}}'`,
      `  kubectl label node NODE nvidia.com/mig.config=${label} --overwrite`,
      `  kubectl wait pod/${podName} --for=condition=Ready`,
      'WARNING: applying a MIG layout destroys every MIG instance on the GPU first: never label a node whose',
      'GPUs `gpu-cosplay up` uses.',
      input.migStrategy === 'mixed'
        ? `Device plugin strategy mixed: the Pod requests nvidia.com/mig-${plan.mig.profile}.`
        : `Device plugin strategy single: every MIG device of the node is a ${plan.mig.profile}, so the Pod requests nvidia.com/gpu.`,
    )
  } else {
    lines.push('', `${input.hostModel.name} has no MIG: the Pod requests a whole GPU (nvidia.com/gpu).`, '  kubectl apply -f THIS_FILE')
  }
  if (settings) {
    lines.push(
      '',
      `This plan also needs ${describeSettings(settings)}, GPU-wide. The GPU operator has no such setting, so`,
      'the privileged DaemonSet below holds it with `gpu-cosplay lease hold` on each labelled node and gives',
      'it back with `gpu-cosplay lease release` on SIGTERM. Its image needs the gpu-cosplay CLI with the',
      '`lease` command (node >= 20) and nvidia-smi. The setting binds every slice of that GPU.',
    )
  }
  return lines
}

function nodeSelector(input: ExportInput): Record<string, string> | undefined {
  return input.layout ? {'nvidia.com/mig.config': input.label} : undefined
}

function pod(input: ExportInput, podName: string): Record<string, unknown> {
  const {plan} = input
  const resource = plan.mig && input.migStrategy === 'mixed' ? `nvidia.com/mig-${plan.mig.profile}` : 'nvidia.com/gpu'
  const env = costumeEnv(plan, {hasTf32: input.target.tf32Tflops !== null}, physicalMiBOf(input), podName)
  const selector = nodeSelector(input)
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {name: podName, labels: {'app.kubernetes.io/name': 'gpu-cosplay', 'io.gpu-cosplay/target': plan.target.key}},
    spec: {
      restartPolicy: 'Never',
      ...(selector ? {nodeSelector: selector} : {}),
      containers: [
        {
          name: 'cosplay',
          image: input.image,
          env: Object.entries(env).map(([name, value]) => ({name, value})),
          resources: {limits: {[resource]: 1}},
        },
      ],
    },
  }
}

function leaseDaemonSet(input: ExportInput, settings: NonNullable<ReturnType<typeof gpuWideSettings>>): Record<string, unknown> {
  const name = `gpu-cosplay-lease-${input.label.replace(/^gpu-cosplay-/, '')}`.slice(0, 63).replace(/[-.]+$/, '')
  const holder = ['--holder', `k8s-${name}`]
  const hostGpu = hostGpuOf(input)
  const script = [
    'set -e',
    // the trap first: a SIGTERM that comes while the hold runs is then taken once it returns, and released
    `trap '${shellLine([...leaseReleaseArgv(hostGpu), ...holder])}; exit 0' TERM INT`,
    shellLine([...leaseHoldArgv(hostGpu, settings), ...holder]),
    'while :; do sleep 3600 & wait $!; done',
    '',
  ].join('\n')
  const labels = {'app.kubernetes.io/name': name}
  const selector = nodeSelector(input)
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: {name, namespace: GPU_OPERATOR_NAMESPACE},
    spec: {
      selector: {matchLabels: labels},
      template: {
        metadata: {labels},
        spec: {
          ...(selector ? {nodeSelector: selector} : {}),
          terminationGracePeriodSeconds: 60,
          containers: [
            {
              name: 'lease',
              image: input.leaseImage,
              command: ['/bin/sh', '-c', script],
              env: [
                {name: 'NVIDIA_VISIBLE_DEVICES', value: 'all'},
                {name: 'NVIDIA_DRIVER_CAPABILITIES', value: 'utility'},
                {name: 'GPU_COSPLAY_STATE_DIR', value: SHARED_STATE_DIR},
              ],
              securityContext: {privileged: true},
              volumeMounts: [{name: 'state', mountPath: SHARED_STATE_DIR}],
            },
          ],
          // The node's own leases and journal: a lease here and a `gpu-cosplay up` on the node see each other.
          volumes: [{name: 'state', hostPath: {path: SHARED_STATE_DIR, type: 'DirectoryOrCreate'}}],
        },
      },
    },
  }
}

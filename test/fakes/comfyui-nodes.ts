/**
 * The fake ComfyUI's own `/object_info`: a small set of node classes in the real format
 * (`input`, `input_order`, `output`, `output_is_list`, `output_name`, `name`, `display_name`,
 * `description`, `python_module`, `category`, `output_node`), typed like the base-install dump in
 * test/fixtures/comfyui/object_info.json (tooltips left out). It covers every class of the
 * fixture workflows txt2img_sd15, stable_audio_open, flux_lora_chain and img2video_wan_lowram,
 * three custom nodes among them (rgthree's LoRA stack, FluxResolutionNode, UnetLoaderGGUF, whose
 * shapes are read off those workflows), plus the usual output nodes. Model-file combos list the
 * file names those workflows use, so they validate; anything else gets `value_not_in_list`.
 *
 * To run other graphs: `startComfyFake({ objectInfo: { ...realDump, ...FAKE_CUSTOM_NODE_INFO } })`
 * or add classes with `comfyNodeInfo()`.
 */

export type NodeInfo = Record<string, any>;
export type ObjectInfo = Record<string, NodeInfo>;

/** An input spec in shorthand: a type name, a combo list, or [type, options] as in a real dump. */
export type InputSpec = string | string[] | [string | string[], Record<string, unknown>];

const INT64 = 9223372036854775807;
const SEED = { default: 0, min: 0, max: 18446744073709551615 };
const SAMPLERS = [
  'euler',
  'euler_cfg_pp',
  'euler_ancestral',
  'heun',
  'dpm_2',
  'lms',
  'dpmpp_2m',
  'dpmpp_2m_sde',
  'dpmpp_3m_sde',
  'dpmpp_3m_sde_gpu',
  'dpmpp_sde',
  'ddim',
  'uni_pc',
  'lcm',
  'res_multistep',
];
const SCHEDULERS = [
  'simple',
  'sgm_uniform',
  'karras',
  'exponential',
  'ddim_uniform',
  'beta',
  'normal',
  'linear_quadratic',
  'kl_optimal',
];

/** Model files this fake "has installed" (the names the fixture workflows use, and a few more). */
export const FAKE_MODELS = {
  checkpoints: [
    'SD15-Cyberrealistic-fp32.safetensors',
    'stable_audio_open_1.0.safetensors',
    'v1-5-pruned-emaonly-fp16.safetensors',
    'sd_xl_base_1.0.safetensors',
  ],
  loras: [
    'None',
    'subject_style_v1.safetensors',
    'flux_realism_v2.safetensors',
    'Wan2.2-Lightning_I2V-A14B-4steps-lora_HIGH_fp16.safetensors',
    'Wan2.2-Lightning_I2V-A14B-4steps-lora_LOW_fp16.safetensors',
  ],
  vae: ['ae.safetensors', 'wan_2.1_vae.safetensors', 'taesd', 'pixel_space'],
  text_encoders: [
    't5_base.safetensors',
    't5xxl_fp16.safetensors',
    'clip_l.safetensors',
    'wan_nsfw_umt5-xxl_fp8_scaled.safetensors',
  ],
  diffusion_models: ['flux1-dev-fp8-e4m3fn.safetensors'],
  unet_gguf: ['Wan2.2-I2V-A14B-HighNoise-Q5_K_M.gguf', 'Wan2.2-I2V-A14B-LowNoise-Q5_K_M.gguf'],
};

function inputEntry(spec: InputSpec): unknown[] {
  if (typeof spec === 'string') return [spec];
  const [head, opts] = spec as unknown[];
  if (spec.length === 2 && typeof opts === 'object' && opts !== null && !Array.isArray(opts)) return [head, opts];
  return [spec];
}

/** One class in the real object_info format. */
export function comfyNodeInfo(
  name: string,
  o: {
    category: string;
    required?: Record<string, InputSpec>;
    optional?: Record<string, InputSpec>;
    output?: string[];
    outputName?: string[];
    outputNode?: boolean;
    displayName?: string;
    module?: string;
    hidden?: Record<string, string>;
  },
): NodeInfo {
  const required = Object.fromEntries(Object.entries(o.required ?? {}).map(([k, s]) => [k, inputEntry(s)]));
  const optional = Object.fromEntries(Object.entries(o.optional ?? {}).map(([k, s]) => [k, inputEntry(s)]));
  const input: Record<string, unknown> = { required };
  const order: Record<string, string[]> = { required: Object.keys(required) };
  if (o.optional) {
    input.optional = optional;
    order.optional = Object.keys(optional);
  }
  if (o.hidden) {
    input.hidden = o.hidden;
    order.hidden = Object.keys(o.hidden);
  }
  const output = o.output ?? [];
  return {
    input,
    input_order: order,
    output,
    output_is_list: output.map(() => false),
    output_name: o.outputName ?? output,
    name,
    display_name: o.displayName ?? name,
    description: '',
    python_module: o.module ?? 'nodes',
    category: o.category,
    output_node: o.outputNode ?? false,
  };
}

const n = comfyNodeInfo;
const SAVE_HIDDEN = { prompt: 'PROMPT', extra_pnginfo: 'EXTRA_PNGINFO' };

function core(): NodeInfo[] {
  return [
    n('CheckpointLoaderSimple', {
      category: 'loaders',
      displayName: 'Load Checkpoint',
      required: { ckpt_name: FAKE_MODELS.checkpoints },
      output: ['MODEL', 'CLIP', 'VAE'],
    }),
    n('CLIPTextEncode', {
      category: 'conditioning',
      displayName: 'CLIP Text Encode (Prompt)',
      required: { text: ['STRING', { multiline: true, dynamicPrompts: true }], clip: 'CLIP' },
      output: ['CONDITIONING'],
    }),
    n('EmptyLatentImage', {
      category: 'latent',
      displayName: 'Empty Latent Image',
      required: {
        width: ['INT', { default: 512, min: 16, max: 16384, step: 8 }],
        height: ['INT', { default: 512, min: 16, max: 16384, step: 8 }],
        batch_size: ['INT', { default: 1, min: 1, max: 4096 }],
      },
      output: ['LATENT'],
    }),
    n('KSampler', {
      category: 'sampling',
      required: {
        model: 'MODEL',
        seed: ['INT', SEED],
        steps: ['INT', { default: 20, min: 1, max: 10000 }],
        cfg: ['FLOAT', { default: 8.0, min: 0.0, max: 100.0, step: 0.1, round: 0.01 }],
        sampler_name: SAMPLERS,
        scheduler: SCHEDULERS,
        positive: 'CONDITIONING',
        negative: 'CONDITIONING',
        latent_image: 'LATENT',
        denoise: ['FLOAT', { default: 1.0, min: 0.0, max: 1.0, step: 0.01 }],
      },
      output: ['LATENT'],
    }),
    n('KSamplerAdvanced', {
      category: 'sampling',
      displayName: 'KSampler (Advanced)',
      required: {
        model: 'MODEL',
        add_noise: ['enable', 'disable'],
        noise_seed: ['INT', SEED],
        steps: ['INT', { default: 20, min: 1, max: 10000 }],
        cfg: ['FLOAT', { default: 8.0, min: 0.0, max: 100.0, step: 0.1 }],
        sampler_name: SAMPLERS,
        scheduler: SCHEDULERS,
        positive: 'CONDITIONING',
        negative: 'CONDITIONING',
        latent_image: 'LATENT',
        start_at_step: ['INT', { default: 0, min: 0, max: 10000 }],
        end_at_step: ['INT', { default: 10000, min: 0, max: 10000 }],
        return_with_leftover_noise: ['disable', 'enable'],
      },
      output: ['LATENT'],
    }),
    n('VAEDecode', {
      category: 'latent',
      displayName: 'VAE Decode',
      required: { samples: 'LATENT', vae: 'VAE' },
      output: ['IMAGE'],
    }),
    n('VAEEncode', {
      category: 'latent',
      displayName: 'VAE Encode',
      required: { pixels: 'IMAGE', vae: 'VAE' },
      output: ['LATENT'],
    }),
    n('VAELoader', {
      category: 'loaders',
      displayName: 'Load VAE',
      required: { vae_name: FAKE_MODELS.vae },
      output: ['VAE'],
    }),
    n('SaveImage', {
      category: 'image',
      displayName: 'Save Image',
      required: { images: 'IMAGE', filename_prefix: ['STRING', { default: 'ComfyUI' }] },
      hidden: SAVE_HIDDEN,
      outputNode: true,
    }),
    n('PreviewImage', {
      category: 'image',
      displayName: 'Preview Image',
      required: { images: 'IMAGE' },
      hidden: SAVE_HIDDEN,
      outputNode: true,
    }),
    // The combo lists the input folder; the fake fills it with the uploads when it serves /object_info.
    n('LoadImage', {
      category: 'image',
      displayName: 'Load Image',
      required: { image: [['example.png'], { image_upload: true }] },
      output: ['IMAGE', 'MASK'],
    }),
    n('PrimitiveInt', {
      category: 'utils/primitive',
      displayName: 'Int',
      module: 'comfy_extras.nodes_primitive',
      required: { value: ['INT', { min: -INT64, max: INT64, control_after_generate: true }] },
      output: ['INT'],
    }),
    n('PrimitiveFloat', {
      category: 'utils/primitive',
      displayName: 'Float',
      module: 'comfy_extras.nodes_primitive',
      required: { value: ['FLOAT', { min: -INT64, max: INT64 }] },
      output: ['FLOAT'],
    }),
    n('PrimitiveString', {
      category: 'utils/primitive',
      displayName: 'String',
      module: 'comfy_extras.nodes_primitive',
      required: { value: ['STRING', { multiline: false }] },
      output: ['STRING'],
    }),
    n('PrimitiveStringMultiline', {
      category: 'utils/primitive',
      displayName: 'String (Multiline)',
      module: 'comfy_extras.nodes_primitive',
      required: { value: ['STRING', { multiline: true }] },
      output: ['STRING'],
    }),
    n('PrimitiveBoolean', {
      category: 'utils/primitive',
      displayName: 'Boolean',
      module: 'comfy_extras.nodes_primitive',
      required: { value: 'BOOLEAN' },
      output: ['BOOLEAN'],
    }),
    n('CLIPLoader', {
      category: 'advanced/loaders',
      displayName: 'Load CLIP',
      required: {
        clip_name: FAKE_MODELS.text_encoders,
        type: [
          'stable_diffusion',
          'stable_cascade',
          'sd3',
          'stable_audio',
          'mochi',
          'ltxv',
          'pixart',
          'cosmos',
          'lumina2',
          'wan',
          'hidream',
          'chroma',
          'ace',
          'omnigen2',
          'qwen_image',
          'hunyuan_image',
        ],
      },
      optional: { device: ['default', 'cpu'] },
      output: ['CLIP'],
    }),
    n('DualCLIPLoader', {
      category: 'advanced/loaders',
      required: {
        clip_name1: FAKE_MODELS.text_encoders,
        clip_name2: FAKE_MODELS.text_encoders,
        type: ['sdxl', 'sd3', 'flux', 'hunyuan_video', 'hidream', 'hunyuan_image'],
      },
      optional: { device: ['default', 'cpu'] },
      output: ['CLIP'],
    }),
    n('UNETLoader', {
      category: 'advanced/loaders',
      displayName: 'Load Diffusion Model',
      required: {
        unet_name: FAKE_MODELS.diffusion_models,
        weight_dtype: ['default', 'fp8_e4m3fn', 'fp8_e4m3fn_fast', 'fp8_e5m2'],
      },
      output: ['MODEL'],
    }),
    n('LoraLoaderModelOnly', {
      category: 'loaders',
      required: {
        model: 'MODEL',
        lora_name: FAKE_MODELS.loras.slice(1),
        strength_model: ['FLOAT', { default: 1.0, min: -100.0, max: 100.0, step: 0.01 }],
      },
      output: ['MODEL'],
    }),
    n('EmptyLatentAudio', {
      category: 'latent/audio',
      displayName: 'Empty Latent Audio',
      module: 'comfy_extras.nodes_audio',
      required: {
        seconds: ['FLOAT', { default: 47.6, min: 1.0, max: 1000.0, step: 0.1 }],
        batch_size: ['INT', { default: 1, min: 1, max: 4096 }],
      },
      output: ['LATENT'],
    }),
    n('VAEDecodeAudio', {
      category: 'latent/audio',
      displayName: 'VAE Decode Audio',
      module: 'comfy_extras.nodes_audio',
      required: { samples: 'LATENT', vae: 'VAE' },
      output: ['AUDIO'],
    }),
    n('SaveAudio', {
      category: 'audio',
      displayName: 'Save Audio (FLAC)',
      module: 'comfy_extras.nodes_audio',
      required: { audio: 'AUDIO', filename_prefix: ['STRING', { default: 'audio/ComfyUI' }] },
      hidden: SAVE_HIDDEN,
      outputNode: true,
    }),
    n('BasicGuider', {
      category: 'sampling/custom_sampling/guiders',
      module: 'comfy_extras.nodes_custom_sampler',
      required: { model: 'MODEL', conditioning: 'CONDITIONING' },
      output: ['GUIDER'],
    }),
    n('BasicScheduler', {
      category: 'sampling/custom_sampling/schedulers',
      module: 'comfy_extras.nodes_custom_sampler',
      required: {
        model: 'MODEL',
        scheduler: SCHEDULERS,
        steps: ['INT', { default: 20, min: 1, max: 10000 }],
        denoise: ['FLOAT', { default: 1.0, min: 0.0, max: 1.0, step: 0.01 }],
      },
      output: ['SIGMAS'],
    }),
    n('KSamplerSelect', {
      category: 'sampling/custom_sampling/samplers',
      module: 'comfy_extras.nodes_custom_sampler',
      required: { sampler_name: SAMPLERS },
      output: ['SAMPLER'],
    }),
    n('RandomNoise', {
      category: 'sampling/custom_sampling/noise',
      module: 'comfy_extras.nodes_custom_sampler',
      required: { noise_seed: ['INT', SEED] },
      output: ['NOISE'],
    }),
    n('FluxGuidance', {
      category: 'advanced/conditioning/flux',
      module: 'comfy_extras.nodes_flux',
      required: {
        conditioning: 'CONDITIONING',
        guidance: ['FLOAT', { default: 3.5, min: 0.0, max: 100.0, step: 0.1 }],
      },
      output: ['CONDITIONING'],
    }),
    n('EmptySD3LatentImage', {
      category: 'latent/sd3',
      module: 'comfy_extras.nodes_sd3',
      required: {
        width: ['INT', { default: 1024, min: 16, max: 16384, step: 16 }],
        height: ['INT', { default: 1024, min: 16, max: 16384, step: 16 }],
        batch_size: ['INT', { default: 1, min: 1, max: 4096 }],
      },
      output: ['LATENT'],
    }),
    n('ModelSamplingFlux', {
      category: 'advanced/model',
      module: 'comfy_extras.nodes_model_advanced',
      required: {
        model: 'MODEL',
        max_shift: ['FLOAT', { default: 1.15, min: 0.0, max: 100.0, step: 0.01 }],
        base_shift: ['FLOAT', { default: 0.5, min: 0.0, max: 100.0, step: 0.01 }],
        width: ['INT', { default: 1024, min: 16, max: 16384, step: 8 }],
        height: ['INT', { default: 1024, min: 16, max: 16384, step: 8 }],
      },
      output: ['MODEL'],
    }),
    n('ModelSamplingSD3', {
      category: 'advanced/model',
      module: 'comfy_extras.nodes_model_advanced',
      required: { model: 'MODEL', shift: ['FLOAT', { default: 3.0, min: 0.0, max: 100.0, step: 0.01 }] },
      output: ['MODEL'],
    }),
    n('SamplerCustomAdvanced', {
      category: 'sampling/custom_sampling',
      module: 'comfy_extras.nodes_custom_sampler',
      required: { noise: 'NOISE', guider: 'GUIDER', sampler: 'SAMPLER', sigmas: 'SIGMAS', latent_image: 'LATENT' },
      output: ['LATENT', 'LATENT'],
      outputName: ['output', 'denoised_output'],
    }),
    n('GetImageSize', {
      category: 'image',
      displayName: 'Get Image Size',
      module: 'comfy_extras.nodes_images',
      required: { image: 'IMAGE' },
      output: ['INT', 'INT', 'INT'],
      outputName: ['width', 'height', 'batch_size'],
    }),
    n('WanImageToVideo', {
      category: 'conditioning/video_models',
      module: 'comfy_extras.nodes_wan',
      required: {
        positive: 'CONDITIONING',
        negative: 'CONDITIONING',
        vae: 'VAE',
        width: ['INT', { default: 832, min: 16, max: 16384, step: 16 }],
        height: ['INT', { default: 480, min: 16, max: 16384, step: 16 }],
        length: ['INT', { default: 81, min: 1, max: 16384, step: 4 }],
        batch_size: ['INT', { default: 1, min: 1, max: 4096 }],
      },
      optional: { clip_vision_output: 'CLIP_VISION_OUTPUT', start_image: 'IMAGE' },
      output: ['CONDITIONING', 'CONDITIONING', 'LATENT'],
      outputName: ['positive', 'negative', 'latent'],
    }),
    n('CreateVideo', {
      category: 'image/video',
      displayName: 'Create Video',
      module: 'comfy_extras.nodes_video',
      required: { images: 'IMAGE', fps: ['FLOAT', { default: 30.0, min: 1.0, max: 120.0, step: 1.0 }] },
      optional: { audio: 'AUDIO' },
      output: ['VIDEO'],
    }),
    n('SaveVideo', {
      category: 'image/video',
      displayName: 'Save Video',
      module: 'comfy_extras.nodes_video',
      required: {
        video: 'VIDEO',
        filename_prefix: ['STRING', { default: 'video/ComfyUI', multiline: false }],
        format: ['COMBO', { default: 'auto', options: ['auto', 'mp4'] }],
        codec: ['COMBO', { default: 'auto', options: ['auto', 'h264'] }],
      },
      outputNode: true,
    }),
    n('SaveWEBM', {
      category: 'image/video',
      module: 'comfy_extras.nodes_video',
      required: {
        images: 'IMAGE',
        filename_prefix: ['STRING', { default: 'ComfyUI' }],
        codec: ['vp9', 'av1'],
        fps: ['FLOAT', { default: 24.0, min: 0.01, max: 1000.0, step: 0.01 }],
        crf: ['FLOAT', { default: 32.0, min: 0, max: 63.0, step: 1 }],
      },
      hidden: SAVE_HIDDEN,
      outputNode: true,
    }),
    n('VAEDecodeHunyuan3D', {
      category: 'latent/3d',
      module: 'comfy_extras.nodes_hunyuan3d',
      required: {
        samples: 'LATENT',
        vae: 'VAE',
        num_chunks: ['INT', { default: 8000, min: 1000, max: 500000 }],
        octree_resolution: ['INT', { default: 256, min: 16, max: 512 }],
      },
      output: ['VOXEL'],
    }),
    n('VoxelToMesh', {
      category: '3d',
      module: 'comfy_extras.nodes_hunyuan3d',
      required: {
        voxel: 'VOXEL',
        algorithm: ['surface net', 'basic'],
        threshold: ['FLOAT', { default: 0.6, min: -1.0, max: 1.0, step: 0.01 }],
      },
      output: ['MESH'],
    }),
    n('SaveGLB', {
      category: '3d',
      module: 'comfy_extras.nodes_hunyuan3d',
      required: { mesh: 'MESH', filename_prefix: ['STRING', { default: 'mesh/ComfyUI' }] },
      hidden: SAVE_HIDDEN,
      outputNode: true,
    }),
    n('EmptyLatentHunyuan3Dv2', {
      category: 'latent/3d',
      module: 'comfy_extras.nodes_hunyuan3d',
      required: {
        resolution: ['INT', { default: 3072, min: 1, max: 8192 }],
        batch_size: ['INT', { default: 1, min: 1, max: 4096 }],
      },
      output: ['LATENT'],
    }),
  ];
}

/** Custom node classes the fixture workflows use (not in the base-install dump); shapes read off those workflows. */
export const FAKE_CUSTOM_NODE_INFO: ObjectInfo = Object.fromEntries(
  [
    n('Lora Loader Stack (rgthree)', {
      category: 'rgthree',
      module: 'custom_nodes.rgthree-comfy',
      required: {
        model: 'MODEL',
        clip: 'CLIP',
        lora_01: FAKE_MODELS.loras,
        strength_01: ['FLOAT', { default: 1.0, min: -10.0, max: 10.0, step: 0.01 }],
        lora_02: FAKE_MODELS.loras,
        strength_02: ['FLOAT', { default: 1.0, min: -10.0, max: 10.0, step: 0.01 }],
        lora_03: FAKE_MODELS.loras,
        strength_03: ['FLOAT', { default: 1.0, min: -10.0, max: 10.0, step: 0.01 }],
        lora_04: FAKE_MODELS.loras,
        strength_04: ['FLOAT', { default: 1.0, min: -10.0, max: 10.0, step: 0.01 }],
      },
      output: ['MODEL', 'CLIP'],
    }),
    n('FluxResolutionNode', {
      category: 'utils',
      module: 'custom_nodes.ComfyUI-FluxResolution',
      required: {
        megapixel: ['0.1', '0.5', '1.0', '1.5', '2.0'],
        aspect_ratio: [
          '1:1 (Perfect Square)',
          '2:3 (Classic Portrait)',
          '3:2 (Classic Landscape)',
          '9:16 (Slim Vertical)',
          '16:9 (Panorama)',
        ],
        custom_ratio: 'BOOLEAN',
        custom_aspect_ratio: 'STRING',
      },
      output: ['INT', 'INT', 'STRING'],
      outputName: ['width', 'height', 'resolution'],
    }),
    n('UnetLoaderGGUF', {
      category: 'bootleg',
      module: 'custom_nodes.ComfyUI-GGUF',
      displayName: 'Unet Loader (GGUF)',
      required: { unet_name: FAKE_MODELS.unet_gguf },
      output: ['MODEL'],
    }),
  ].map((info) => [info.name as string, info]),
);

/** The default object_info: core classes plus FAKE_CUSTOM_NODE_INFO. A fresh copy each call. */
export function fakeObjectInfo(): ObjectInfo {
  const all = [...core(), ...Object.values(FAKE_CUSTOM_NODE_INFO)];
  return structuredClone(Object.fromEntries(all.map((info) => [info.name as string, info])));
}

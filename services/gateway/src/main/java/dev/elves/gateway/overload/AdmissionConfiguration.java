package dev.elves.gateway.overload;

import dev.elves.web.ShutdownDrainConfiguration;
import io.micrometer.core.instrument.MeterRegistry;

import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The admission filter, ahead of every other filter (security included) but the shutdown drain,
 * on every path of the API port (no URL pattern: see {@link AdmissionFilter}).
 */
@Configuration(proxyBeanMethods = false)
class AdmissionConfiguration {

	@Bean
	FilterRegistrationBean<AdmissionFilter> admissionFilter(AdmissionProperties properties, MeterRegistry meters) {
		FilterRegistrationBean<AdmissionFilter> registration = new FilterRegistrationBean<>(
				new AdmissionFilter(properties, meters));
		registration.setOrder(ShutdownDrainConfiguration.NEXT);
		return registration;
	}

}
